// The service configuration: every environment variable is named once here, validated once
// (zod/mini: classic zod adds ~440 KB to each bundle) and mapped once to a camelCase field.
// Defaults point at the local stack. Secrets named by *_SSM_PARAM are read by `resolveSecrets`
// at init, so loading the config itself never touches AWS.
import * as z from 'zod/mini';
import type { EngineConfig } from './compressors/types.js';
import { ServiceError } from './errors.js';
import { safeParse } from './validation.js';

/**
 * Default shard counts of the two sparse, time-ordered indexes, sized by `npm run bench -- capacity`
 * (bench/CAPACITY.md) so neither caps the service below 10,000 compactions/s: each index partition
 * takes 1,000 WCU/s, a compaction writes its attemptsByExpiry shard at begin and commit (an in-place
 * one also its archive task) and again on every lease refresh (the attempt record's extend moves
 * its entry), and a rotation writes one rotationsByTime entry, all at transactional cost.
 * Shard counts may only grow: the sweep queries every shard below the configured count.
 */
/** The Redlock lease TTL: the LEASE_TTL_MS default and compaction's when none is passed. */
export const DEFAULT_LEASE_TTL_MS = 30_000;

/**
 * Request body bytes per second per tenant (issue 35 item 5). One session's partition takes about
 * 1 MB/s of writes in DynamoDB; 2 MiB/s lets a tenant fill two such partitions at once, a small
 * share of a stage, so big bodies cannot buy another tenant's latency.
 */
export const DEFAULT_BODY_BYTES_PER_SECOND = 2 * 1024 * 1024;
/** Archives and purges per partition: under a third of DynamoDB's 1,000 WCU/s (lib/lineage/dynamo/write-budget.ts). */
export const DEFAULT_BACKGROUND_WRITE_UNITS_PER_SECOND = 300;

/**
 * P6 (issue 35): what one compaction attempt reads, summarizes and writes at most. 4 MiB is about a
 * fifth of what an in-place compress handled in 2.2 s on the bench machine (6,000 items, 21 MB), so
 * read, engine and commit finish well inside a 29 s HTTP function; a longer session is compacted a
 * bounded oldest part at a time. The token bound is for model engines: set it to what the model
 * takes in one call (1M tokens is about 4 MiB of text, i.e. no tighter than the bytes by default).
 */
export const DEFAULT_ATTEMPT_MAX_BYTES = 4 * 1024 * 1024;
export const DEFAULT_ATTEMPT_MAX_TOKENS = 1_000_000;

export const DEFAULT_ATTEMPT_SHARDS = 128;
export const DEFAULT_ROTATION_SHARDS = 32;

export type CompactionMode = 'rotate' | 'in_place';

/** Where the Redlock node URLs come from: the plain variable, or an SSM SecureString (which wins). */
export type RedisSource = { kind: 'urls'; urls: string[] } | { kind: 'ssm'; parameterName: string };

/** DynamoDB endpoint and transport; lib/aws-clients.ts turns these into the SDK's retry and timeouts. */
export interface DynamoSettings {
  /** DynamoDB Local (local runs only). */
  endpoint?: string;
  /** Total tries per call, first included (SDK standard retry strategy). */
  maxAttempts: number;
  connectTimeoutMs: number;
  /** Per try: a stalled DynamoDB fails a call after about maxAttempts x this, well inside the function timeout. */
  requestTimeoutMs: number;
}

export interface Config {
  /** The one service name of every handler's logs and metrics. */
  serviceName: string;
  metricsNamespace: string;
  region: string;
  tableName: string;
  /** Shards of the sparse attemptsByExpiry / rotationsByTime indexes (bench/CAPACITY.md); raise only, never lower. */
  attemptShards: number;
  rotationShards: number;
  dynamo: DynamoSettings;
  redis: RedisSource;
  /** PEM of a private CA for `rediss://` nodes (REDIS_TLS_CA; `\n` escapes allowed). Not a secret. */
  redisTlsCa?: string;
  leaseTtlMs: number;
  /** P6: the most one compaction attempt reads, summarizes and writes (the oldest part of a longer session). */
  compactionAttemptBudget: { maxBytes: number; maxTokens: number };
  /** Sessions above this many tokens are compacted after a turn (SPEC F3). */
  compactionTokenThreshold: number;
  afterTurnCompactionMode: CompactionMode;
  /** How long a processed SQS messageId is remembered; SQS retries come far sooner than a day. */
  afterTurnIdempotencyTtlSeconds: number;
  /** SQS queue for after-turn events (deployed). */
  afterTurnQueueUrl?: string;
  /** serverless-offline Lambda invoke endpoint (local): after-turn events go straight to the function. */
  localLambdaEndpoint?: string;
  /** The afterTurn function to invoke locally; else derived from `lambdaFunctionName`. */
  afterTurnFunctionName?: string;
  /** The function this process runs as (Lambda and serverless-offline set AWS_LAMBDA_FUNCTION_NAME). */
  lambdaFunctionName?: string;
  /** HTTP API: largest request body accepted (SPEC F1, 413 above it). */
  maxBodyBytes: number;
  /** How long an Idempotency-Key is remembered (SPEC A3). */
  idempotencyTtlSeconds: number;
  /** How long a generation an in-place compaction replaced is kept (SPEC C11). */
  archiveRetentionSeconds: number;
  /** How long a resolved API key is trusted per container, i.e. the revocation delay; 0 disables the cache. */
  apiKeyCacheTtlSeconds: number;
  /** Per-tenant limits on the Redis nodes (429 rate_limited above them; 0 turns one off). */
  tenantLimits: { requestsPerSecond: number; compressionsPerMinute: number; bodyBytesPerSecond: number };
  /** Write units per second one session's partition may take for archives and purges (docs/limits-and-pacing.md). */
  backgroundWriteUnitsPerSecond: number;
  eventBusName?: string;
  /** Local stage: the JSON-lines file SessionCompacted events are appended to (e2e tests read it). */
  localEventsFile?: string;
  /** The compaction engine; with `openAiApiKeySsmParam` set, its key is filled in at init by `resolveSecrets`. */
  engine: EngineConfig;
  /** SSM SecureString holding the OpenAI key; wins over OPENAI_API_KEY. Only http and afterTurn read it. */
  openAiApiKeySsmParam?: string;
}

export class ConfigError extends ServiceError {
  override readonly name = 'ConfigError';
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { status: 500, code: 'internal', cause: opts.cause });
  }
}

// --- the variables: keys are the variable names, so every issue's path names the variable ----

const positiveInt = (error = 'must be a positive integer') => z.coerce.number({ error }).check(z.int({ error }), z.positive({ error }));
const wholeSeconds = (error = 'must be a whole number of seconds (0 or more)') =>
  z.coerce.number({ error }).check(z.int({ error }), z.gte(0, { error }));
const anyUrl = z.url({ protocol: /^https?$/, error: 'must be a URL (http or https)' });

const telemetryShape = {
  POWERTOOLS_SERVICE_NAME: z._default(z.string(), 'session-lineage'),
  POWERTOOLS_METRICS_NAMESPACE: z._default(z.string(), 'SessionLineage'),
};

const engineShape = {
  OPENAI_BASE_URL: z.optional(anyUrl),
  OPENAI_MODEL: z.optional(z.string()),
  OPENAI_API_KEY: z.optional(z.string()),
  OPENAI_API_KEY_SSM_PARAM: z.optional(z.string()),
};

const envSchema = z.object({
  ...telemetryShape,
  ...engineShape,
  AWS_REGION: z._default(z.string(), 'us-east-1'),
  TABLE_NAME: z._default(z.string(), 'session-lineage'),
  ATTEMPT_SHARDS: z._default(positiveInt(), DEFAULT_ATTEMPT_SHARDS),
  ROTATION_SHARDS: z._default(positiveInt(), DEFAULT_ROTATION_SHARDS),
  DYNAMODB_ENDPOINT: z.optional(anyUrl),
  DYNAMODB_MAX_ATTEMPTS: z._default(positiveInt(), 3),
  DYNAMODB_CONNECT_TIMEOUT_MS: z._default(positiveInt(), 1_000),
  DYNAMODB_REQUEST_TIMEOUT_MS: z._default(positiveInt(), 5_000),
  REDIS_URLS: z._default(z.string(), 'redis://127.0.0.1:6379'),
  REDIS_URLS_SSM_PARAM: z.optional(z.string()),
  REDIS_TLS_CA: z.optional(z.string().check(z.regex(/-----BEGIN CERTIFICATE-----/, 'must be a PEM certificate'))),
  LEASE_TTL_MS: z._default(positiveInt(), DEFAULT_LEASE_TTL_MS),
  COMPACTION_TOKEN_THRESHOLD: z._default(positiveInt(), 8_000),
  COMPACTION_ATTEMPT_MAX_BYTES: z._default(positiveInt(), DEFAULT_ATTEMPT_MAX_BYTES),
  COMPACTION_ATTEMPT_MAX_TOKENS: z._default(positiveInt(), DEFAULT_ATTEMPT_MAX_TOKENS),
  AFTER_TURN_COMPACTION_MODE: z._default(z.enum(['rotate', 'in_place'], { error: 'must be rotate or in_place' }), 'rotate'),
  AFTER_TURN_IDEMPOTENCY_TTL_SECONDS: z._default(positiveInt(), 24 * 3600),
  AFTER_TURN_QUEUE_URL: z.optional(anyUrl),
  LOCAL_LAMBDA_ENDPOINT: z.optional(anyUrl),
  AFTER_TURN_FUNCTION_NAME: z.optional(z.string()),
  AWS_LAMBDA_FUNCTION_NAME: z.optional(z.string()),
  MAX_BODY_BYTES: z._default(positiveInt(), 5_242_880),
  IDEMPOTENCY_TTL_SECONDS: z._default(positiveInt(), 24 * 3600),
  ARCHIVE_RETENTION_SECONDS: z._default(positiveInt(), 7 * 24 * 3600),
  API_KEY_CACHE_TTL_SECONDS: z._default(wholeSeconds(), 60),
  RATE_LIMIT_REQUESTS_PER_SECOND: z._default(wholeSeconds('must be a whole number (0 turns the limit off)'), 50),
  RATE_LIMIT_COMPRESSIONS_PER_MINUTE: z._default(wholeSeconds('must be a whole number (0 turns the limit off)'), 60),
  RATE_LIMIT_BODY_BYTES_PER_SECOND: z._default(
    wholeSeconds('must be a whole number (0 turns the limit off)'),
    DEFAULT_BODY_BYTES_PER_SECOND,
  ),
  BACKGROUND_WRITE_UNITS_PER_SECOND: z._default(positiveInt(), DEFAULT_BACKGROUND_WRITE_UNITS_PER_SECOND),
  EVENT_BUS_NAME: z.optional(z.string()),
  LOCAL_EVENTS_FILE: z.optional(z.string()),
});

/**
 * Blank means unset, for every variable: serverless renders an absent `${env:X, ''}` as ''.
 * Values are trimmed; none of ours is whitespace-sensitive.
 */
function presentVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    const v = value?.trim();
    if (v) out[name] = v;
  }
  return out;
}

function parse<T extends z.ZodMiniObject>(schema: T, env: NodeJS.ProcessEnv, what: string): z.output<T> {
  const parsed = safeParse(schema, presentVariables(env));
  if (parsed.success) return parsed.data;
  // Values are not echoed: REDIS_URLS and OPENAI_API_KEY may carry credentials.
  const issues = parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ');
  throw new ConfigError(`Invalid ${what}: ${issues}`);
}

// --- mapping --------------------------------------------------------------------------------

/** Comma-separated redis:// or rediss:// URLs; `source` names where they came from in the error. */
export function parseRedisUrls(value: string, source: string): string[] {
  const urls = value
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
  if (urls.length === 0 || urls.some((u) => !/^rediss?:\/\/\S+$/.test(u))) {
    throw new ConfigError(`Invalid configuration: ${source} must be comma-separated redis:// or rediss:// URLs`);
  }
  return urls;
}

function toEngineConfig(e: z.output<z.ZodMiniObject<typeof engineShape>>): EngineConfig {
  const { OPENAI_BASE_URL: baseUrl, OPENAI_MODEL: model, OPENAI_API_KEY: apiKey, OPENAI_API_KEY_SSM_PARAM: keyParam } = e;
  if ([baseUrl, model, apiKey, keyParam].every((v) => v === undefined)) return { kind: 'extractive' };
  if (baseUrl === undefined || model === undefined) {
    // Half a summarizer config is a deployment mistake: say which part is missing rather than silently going extractive.
    const missing = [baseUrl === undefined ? 'OPENAI_BASE_URL' : '', model === undefined ? 'OPENAI_MODEL' : ''].filter(Boolean);
    const why = missing.map((name) => `${name} is missing (the summarizer needs OPENAI_BASE_URL and OPENAI_MODEL)`);
    throw new ConfigError(`Invalid compaction engine config: ${why.join('; ')}`);
  }
  return apiKey === undefined ? { kind: 'openai', baseUrl, model } : { kind: 'openai', baseUrl, model, apiKey };
}

/** Validates the environment; throws ConfigError naming every bad variable. Never calls AWS. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const e = parse(envSchema, env, 'configuration');
  return {
    serviceName: e.POWERTOOLS_SERVICE_NAME,
    metricsNamespace: e.POWERTOOLS_METRICS_NAMESPACE,
    region: e.AWS_REGION,
    tableName: e.TABLE_NAME,
    attemptShards: e.ATTEMPT_SHARDS,
    rotationShards: e.ROTATION_SHARDS,
    dynamo: {
      endpoint: e.DYNAMODB_ENDPOINT,
      maxAttempts: e.DYNAMODB_MAX_ATTEMPTS,
      connectTimeoutMs: e.DYNAMODB_CONNECT_TIMEOUT_MS,
      requestTimeoutMs: e.DYNAMODB_REQUEST_TIMEOUT_MS,
    },
    // The secret parameter wins; REDIS_URLS (and its local default) is then ignored, not validated.
    redis: e.REDIS_URLS_SSM_PARAM
      ? { kind: 'ssm', parameterName: e.REDIS_URLS_SSM_PARAM }
      : { kind: 'urls', urls: parseRedisUrls(e.REDIS_URLS, 'REDIS_URLS') },
    redisTlsCa: e.REDIS_TLS_CA?.replaceAll('\\n', '\n'),
    leaseTtlMs: e.LEASE_TTL_MS,
    compactionTokenThreshold: e.COMPACTION_TOKEN_THRESHOLD,
    compactionAttemptBudget: { maxBytes: e.COMPACTION_ATTEMPT_MAX_BYTES, maxTokens: e.COMPACTION_ATTEMPT_MAX_TOKENS },
    afterTurnCompactionMode: e.AFTER_TURN_COMPACTION_MODE,
    afterTurnIdempotencyTtlSeconds: e.AFTER_TURN_IDEMPOTENCY_TTL_SECONDS,
    afterTurnQueueUrl: e.AFTER_TURN_QUEUE_URL,
    localLambdaEndpoint: e.LOCAL_LAMBDA_ENDPOINT,
    afterTurnFunctionName: e.AFTER_TURN_FUNCTION_NAME,
    lambdaFunctionName: e.AWS_LAMBDA_FUNCTION_NAME,
    maxBodyBytes: e.MAX_BODY_BYTES,
    idempotencyTtlSeconds: e.IDEMPOTENCY_TTL_SECONDS,
    archiveRetentionSeconds: e.ARCHIVE_RETENTION_SECONDS,
    apiKeyCacheTtlSeconds: e.API_KEY_CACHE_TTL_SECONDS,
    tenantLimits: {
      requestsPerSecond: e.RATE_LIMIT_REQUESTS_PER_SECOND,
      compressionsPerMinute: e.RATE_LIMIT_COMPRESSIONS_PER_MINUTE,
      bodyBytesPerSecond: e.RATE_LIMIT_BODY_BYTES_PER_SECOND,
    },
    backgroundWriteUnitsPerSecond: e.BACKGROUND_WRITE_UNITS_PER_SECOND,
    eventBusName: e.EVENT_BUS_NAME,
    localEventsFile: e.LOCAL_EVENTS_FILE,
    engine: toEngineConfig(e),
    openAiApiKeySsmParam: e.OPENAI_API_KEY_SSM_PARAM,
  };
}

/** The compaction-engine variables alone, same rules and messages as the full config. */
export function engineConfigFromEnvironment(env: NodeJS.ProcessEnv = process.env): EngineConfig {
  return toEngineConfig(parse(z.object(engineShape), env, 'compaction engine config'));
}

/** What the logger and metrics need before anything is built; cannot fail (plain strings with defaults). */
export function telemetryConfig(env: NodeJS.ProcessEnv = process.env): Pick<Config, 'serviceName' | 'metricsNamespace'> {
  const e = parse(z.object(telemetryShape), env, 'configuration');
  return { serviceName: e.POWERTOOLS_SERVICE_NAME, metricsNamespace: e.POWERTOOLS_METRICS_NAMESPACE };
}

// --- secrets --------------------------------------------------------------------------------

/** Reads one decrypted SSM SecureString (lib/aws-clients.ts: Powertools parameters, cached). */
export type SecretReader = (parameterName: string) => Promise<string | undefined>;

async function readSecret(read: SecretReader, parameterName: string, variable: string): Promise<string> {
  let value: string | undefined;
  try {
    value = (await read(parameterName))?.trim();
  } catch (err) {
    // Powertools wraps the SDK's error (e.g. ParameterNotFound, AccessDeniedException): name both.
    const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.name})` : '';
    const why = err instanceof Error ? `${err.name}: ${err.message}${cause}` : String(err);
    throw new ConfigError(`Cannot read SSM parameter "${parameterName}" (${variable}): ${why}`, { cause: err });
  }
  if (!value) throw new ConfigError(`SSM parameter "${parameterName}" (${variable}) is empty`);
  return value;
}

/** Redis node URLs: REDIS_URLS, or the SSM SecureString REDIS_URLS_SSM_PARAM names. */
export async function resolveRedisUrls(redis: RedisSource, read: SecretReader): Promise<string[]> {
  if (redis.kind === 'urls') return redis.urls;
  const value = await readSecret(read, redis.parameterName, 'REDIS_URLS_SSM_PARAM');
  return parseRedisUrls(value, `SSM parameter "${redis.parameterName}" (REDIS_URLS_SSM_PARAM)`);
}

/** The engine config with its API key read from SSM when OPENAI_API_KEY_SSM_PARAM is set. */
export async function resolveEngine(config: Pick<Config, 'engine' | 'openAiApiKeySsmParam'>, read: SecretReader): Promise<EngineConfig> {
  const { engine, openAiApiKeySsmParam } = config;
  if (engine.kind !== 'openai' || !openAiApiKeySsmParam) return engine;
  return { ...engine, apiKey: await readSecret(read, openAiApiKeySsmParam, 'OPENAI_API_KEY_SSM_PARAM') };
}

/** The region of an AWS client built without one (tests, CLI, benchmarks): AWS_REGION, else the local stack's. */
export function defaultAwsRegion(env: NodeJS.ProcessEnv = process.env): string {
  return env.AWS_REGION ?? 'us-east-1';
}

/** The X-Ray trace header of the running invocation: Lambda sets it per invocation, so it is read at each call. */
export function currentTraceHeader(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env._X_AMZN_TRACE_ID;
}
