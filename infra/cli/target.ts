// Which stack a command talks to. By default the local one `npm start` runs (its stack file);
// `--stage <s>` a deployed stage: the table from the CloudFormation stack `session-lineage-<s>`,
// the Redis URLs from the stage's SSM SecureString. For every setting the order is: flag, then
// environment variable (DYNAMODB_ENDPOINT, TABLE_NAME, REDIS_URLS, AWS_REGION), then the stack.
// Everything is fetched lazily, so a Redis-only command never needs DynamoDB or CloudFormation.
import { existsSync, readFileSync } from 'node:fs';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetParameterCommand } from '@aws-sdk/client-ssm';
import { createDynamoClient, createSsmClient } from '../../lib/aws-clients.js';
import { isPidAlive, isStarting, LOCAL_STACK_FILE, type LocalStackFile, type StartingStackFile } from '../local/stack-file.js';
import { CliError, UsageError } from './errors.js';
import type { CliIo } from './io.js';
import { note } from './output.js';

export interface TargetFlags {
  stage?: string | undefined;
  region?: string | undefined;
  table?: string | undefined;
}

export interface TableTarget {
  client: DynamoDBClient;
  tableName: string;
  endpoint: string | undefined;
}

export interface Target {
  /** Set for a deployed stage; undefined for the local stack. */
  readonly stage: string | undefined;
  readonly region: string;
  table(): Promise<TableTarget>;
  redisUrls(): Promise<string[]>;
  /** A CloudFormation output of the stage's stack (deployed stages only). */
  stackOutput(name: string): Promise<string | undefined>;
  close(): void;
}

export const stackNameOf = (stage: string): string => `session-lineage-${stage}`;
export const redisUrlsParamOf = (stage: string): string => `/session-lineage/${stage}/redis-urls`;

const splitUrls = (v: string | undefined): string[] | undefined => {
  const urls = v
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return urls?.length ? urls : undefined;
};

export function resolveTarget(flags: TargetFlags, io: CliIo): Target {
  if (flags.stage === undefined) return localTarget(flags, io);
  if (!/^[A-Za-z0-9-]{1,64}$/.test(flags.stage)) throw new UsageError(`invalid --stage "${flags.stage}"`);
  return stageTarget(flags.stage, flags, io);
}

/** Runs `fn` on the resolved target and releases its clients, whatever happens. */
export async function withTarget<T>(flags: TargetFlags, io: CliIo, fn: (target: Target) => Promise<T>): Promise<T> {
  const target = resolveTarget(flags, io);
  try {
    return await fn(target);
  } finally {
    target.close();
  }
}

function readStackFile(path: string): Partial<LocalStackFile> | StartingStackFile {
  if (!existsSync(path)) return {};
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Partial<LocalStackFile> | StartingStackFile;
  } catch (err) {
    throw new CliError(`cannot read the local stack file ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const staleStackFile = (path: string, pid: number) =>
  new CliError(
    `no local stack is running: ${path} is stale (its npm start, pid ${pid}, is not running); ` +
      'run `npm start` again (it replaces the file), or delete the file',
  );

/** How long the CLI waits for an `npm start` that is still starting (a cold start builds and runs a JVM). */
export const STACK_WAIT_MS = 180_000;
const STACK_POLL_MS = 250;

/**
 * The stack file; while the `npm start` that wrote it is still starting (its marker, issue 34), the
 * CLI waits for the full file, saying so once, for at most STACK_WAIT_MS.
 */
async function loadStackFile(path: string, io: CliIo, waitMs = STACK_WAIT_MS): Promise<Partial<LocalStackFile>> {
  const deadline = Date.now() + waitMs;
  let said = false;
  for (;;) {
    const file = readStackFile(path);
    if (!isStarting(file)) return file;
    if (!isPidAlive(file.pid)) throw staleStackFile(path, file.pid); // a start that was killed while starting
    if (Date.now() >= deadline)
      throw new CliError(`npm start (pid ${file.pid}) is still starting after ${Math.round(waitMs / 1000)} s (${path}); see its output`);
    if (!said) {
      note(io, `npm start (pid ${file.pid}) is still starting; waiting for it (up to ${Math.round(waitMs / 1000)} s)...`);
      said = true;
    }
    await new Promise((r) => setTimeout(r, STACK_POLL_MS));
  }
}

/** Memoizes one lazily created DynamoDB client. */
function tableHolder(make: () => Promise<{ endpoint: string | undefined; tableName: string; region: string }>) {
  let made: Promise<TableTarget> | undefined;
  let client: DynamoDBClient | undefined;
  return {
    get: (): Promise<TableTarget> =>
      (made ??= make().then(({ endpoint, tableName, region }) => {
        client = createDynamoClient({ endpoint, region, maxAttempts: 3 });
        return { client, tableName, endpoint };
      })),
    close: () => client?.destroy(),
  };
}

function localTarget(flags: TargetFlags, io: CliIo): Target {
  const env = io.env;
  const file = env.LOCAL_STACK_FILE || LOCAL_STACK_FILE;
  let loaded: Promise<Partial<LocalStackFile>> | undefined;
  const stackFile = () => (loaded ??= loadStackFile(file, io));
  // TABLE_NAME without an endpoint names a real AWS table: then nothing comes from the local file.
  const useFile = !env.TABLE_NAME || env.DYNAMODB_ENDPOINT !== undefined;
  const region = flags.region || env.AWS_REGION || 'us-east-1';
  const noStack = `run \`npm start\` first (it writes ${file}), or pass --stage <stage>`;
  /** A value read from the stack file, refused when the `npm start` that wrote it is gone (killed, not stopped). */
  const fromFile = <T>(stack: Partial<LocalStackFile>, value: T): T => {
    if (value !== undefined && typeof stack.pid === 'number' && !isPidAlive(stack.pid)) {
      throw staleStackFile(file, stack.pid);
    }
    return value;
  };
  const table = tableHolder(() =>
    (async () => {
      const needsFile = useFile && (!(flags.table || env.TABLE_NAME) || !env.DYNAMODB_ENDPOINT);
      const stack = needsFile ? await stackFile() : {};
      const tableName = flags.table || env.TABLE_NAME || (useFile ? fromFile(stack, stack.tableName) : undefined);
      if (!tableName) throw new CliError(`no table: ${noStack}, or set TABLE_NAME`);
      return { endpoint: env.DYNAMODB_ENDPOINT || (useFile ? fromFile(stack, stack.dynamodbEndpoint) : undefined), tableName, region };
    })(),
  );
  return {
    stage: undefined,
    region,
    table: table.get,
    redisUrls() {
      return (async () => {
        const fromEnv = splitUrls(env.REDIS_URLS);
        const stack = fromEnv || !useFile ? {} : await stackFile();
        const urls = fromEnv ?? (useFile ? fromFile(stack, stack.redisUrls) : undefined);
        if (!urls?.length) throw new CliError(`no Redis nodes: ${noStack}, or set REDIS_URLS`);
        return urls;
      })();
    },
    stackOutput() {
      return Promise.reject(new CliError('the local stack has no CloudFormation stack: pass --stage <stage>'));
    },
    close: table.close,
  };
}

function stageTarget(stage: string, flags: TargetFlags, io: CliIo): Target {
  const env = io.env;
  // No silent default: a wrong region would look like a missing stack.
  const region = flags.region || env.AWS_REGION || env.AWS_DEFAULT_REGION;
  if (!region) throw new UsageError('--stage needs a region: pass --region <region> or set AWS_REGION');
  const stackName = stackNameOf(stage);
  let outputs: Promise<Map<string, string>> | undefined;
  const stackOutputs = () =>
    (outputs ??= describeOutputs(stackName, region).catch((err: unknown) => {
      outputs = undefined;
      throw err;
    }));
  const override = (variable: string, what: string): string | undefined => {
    const value = env[variable];
    if (value) note(io, `${variable} from the environment overrides the stage's ${what}`);
    return value || undefined;
  };
  const table = tableHolder(async () => {
    const endpoint = override('DYNAMODB_ENDPOINT', 'DynamoDB endpoint');
    const tableName = flags.table || override('TABLE_NAME', 'table') || (await stackOutputs()).get('LineageTableName');
    if (!tableName) throw new CliError(`stack ${stackName} has no LineageTableName output: pass --table <name>`);
    return { endpoint, tableName, region };
  });
  return {
    stage,
    region,
    table: table.get,
    async redisUrls() {
      const fromEnv = splitUrls(override('REDIS_URLS', 'Redis URLs'));
      if (fromEnv) return fromEnv;
      // The stack says which parameter its functions read (a stage may use the created caches' secret).
      const name = (await stackOutputs()).get('RedisUrlsSsmParam') ?? redisUrlsParamOf(stage);
      return readRedisUrlsParam(name, region);
    },
    async stackOutput(name) {
      return (await stackOutputs()).get(name);
    },
    close: table.close,
  };
}

async function describeOutputs(stackName: string, region: string): Promise<Map<string, string>> {
  const cfn = new CloudFormationClient({ region });
  try {
    const out = await cfn.send(new DescribeStacksCommand({ StackName: stackName }));
    const stack = out.Stacks?.[0];
    if (!stack) throw new CliError(`stack ${stackName} not found in ${region}`);
    return new Map(
      (stack.Outputs ?? []).flatMap((o) => (o.OutputKey && o.OutputValue !== undefined ? [[o.OutputKey, o.OutputValue] as const] : [])),
    );
  } catch (err) {
    if (err instanceof Error && err.name === 'ValidationError' && /does not exist/.test(err.message)) {
      throw new CliError(`stack ${stackName} not found in ${region}: deploy the stage or check --stage / --region`);
    }
    throw err;
  } finally {
    cfn.destroy();
  }
}

async function readRedisUrlsParam(name: string, region: string): Promise<string[]> {
  const ssm = createSsmClient({ region });
  try {
    const out = await ssm.send(new GetParameterCommand({ Name: name, WithDecryption: true }));
    const urls = splitUrls(out.Parameter?.Value);
    if (!urls) throw new CliError(`SSM parameter ${name} holds no Redis URLs`);
    return urls;
  } catch (err) {
    if (err instanceof Error && err.name === 'ParameterNotFound') {
      throw new CliError(`SSM parameter ${name} not found in ${region} (README.md "SSM parameters"), or set REDIS_URLS`);
    }
    throw err;
  } finally {
    ssm.destroy();
  }
}
