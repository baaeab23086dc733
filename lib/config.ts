// Runtime configuration from the environment, validated once. Defaults point at the
// local stack written by `npm start` (infra/local/.local-stack.json is read by infra, not here).
import { z } from 'zod';
import { engineConfigFromEnv, type EngineConfig } from './compressors/engine-config.js';

/** Unset and empty mean the same thing for optional variables (serverless writes '' for absent ones). */
const optionalString = z.preprocess((v) => (v === '' ? undefined : v), z.string().min(1).optional());

const schema = z.object({
  REDIS_URLS: z.string().min(1).default('redis://127.0.0.1:6379'),
  DYNAMODB_ENDPOINT: z.preprocess((v) => (v === '' ? undefined : v), z.string().url().optional()),
  AWS_REGION: z.string().default('us-east-1'),
  TABLE_NAME: z.string().min(1).default('session-lineage'),
  LEASE_TTL_MS: z.coerce.number().int().positive().default(30_000),
  /** SQS queue for after-turn events (deployed). */
  AFTER_TURN_QUEUE_URL: optionalString,
  /** serverless-offline Lambda invoke endpoint (local): after-turn events go straight to the function. */
  LOCAL_LAMBDA_ENDPOINT: optionalString,
  /** Sessions above this many tokens are compacted after a turn (SPEC F3). */
  COMPACTION_TOKEN_THRESHOLD: z.coerce.number().int().positive().default(8_000),
  /** How the after-turn consumer compacts: rotate to a child (default) or in place. */
  AFTER_TURN_COMPACTION_MODE: z.enum(['rotate', 'in_place']).default('rotate'),
  /** How long a processed SQS messageId is remembered; SQS retries come far sooner than a day. */
  AFTER_TURN_IDEMPOTENCY_TTL_SECONDS: z.coerce.number().int().positive().default(24 * 3600),
  /** HTTP API: largest request body accepted (SPEC F1, 413 above it). */
  MAX_BODY_BYTES: z.coerce.number().int().positive().default(1_048_576),
});

/** The service config; `engine` comes from OPENAI_BASE_URL / OPENAI_MODEL / OPENAI_API_KEY. */
export type Config = z.infer<typeof schema> & { engine: EngineConfig };

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return { ...schema.parse(env), engine: engineConfigFromEnv(env) };
}

export function redisUrls(config: Pick<Config, 'REDIS_URLS'>): string[] {
  return config.REDIS_URLS.split(',').map((u) => u.trim()).filter(Boolean);
}
