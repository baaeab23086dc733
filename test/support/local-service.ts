// The HTTP API (and the other functions) running under serverless-offline on free ports,
// against the vitest global-setup stack (REDIS_URLS, DYNAMODB_ENDPOINT, TABLE_NAME in env).
import { buildFunctions } from '../../infra/build.js';
import { invokeLocal, startOffline } from '../../infra/local/offline.js';
import { freePort } from '../../infra/local/processes.js';
import { ApiKeyStore } from '../../lib/api/api-keys.js';
import { createDynamoClient } from '../../lib/aws-clients.js';

export interface LocalServiceOptions {
  /** Extra environment for the functions (e.g. COMPACTION_TOKEN_THRESHOLD). */
  env?: Record<string, string>;
  /** Route after-turn events to the local afterTurn function (default true). */
  afterTurn?: boolean;
  /** Skip the esbuild step (bundles already built in this run). */
  skipBuild?: boolean;
}

export interface LocalService {
  baseUrl: string;
  lambdaEndpoint: string;
  createApiKey(tenant: string): Promise<string>;
  /** Invokes a function (afterTurn, sweep, http) through the Lambda Invoke API. */
  invoke(functionKey: string, payload?: unknown): Promise<unknown>;
  /** The last 20 kB of serverless-offline's output (the functions' logs). */
  log(): string;
  stop(): Promise<void>;
}

function requireEnv(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run under test/vitest.config.ts (global setup starts the stack)`);
  return v;
}

export async function startLocalService(opts: LocalServiceOptions = {}): Promise<LocalService> {
  const tableName = requireEnv('TABLE_NAME');
  const dynamodbEndpoint = requireEnv('DYNAMODB_ENDPOINT');
  const env = {
    REDIS_URLS: requireEnv('REDIS_URLS'),
    DYNAMODB_ENDPOINT: dynamodbEndpoint,
    TABLE_NAME: tableName,
    // Per-tenant limits off unless a test asks for them (tenant-limits.test.ts): these files drive one
    // tenant far past any sane per-tenant rate on purpose, and the limits have their own e2e tests.
    RATE_LIMIT_REQUESTS_PER_SECOND: '0',
    RATE_LIMIT_COMPRESSIONS_PER_MINUTE: '0',
    RATE_LIMIT_BODY_BYTES_PER_SECOND: '0',
    ...opts.env,
  };
  if (!opts.skipBuild) await buildFunctions();
  const [httpPort, lambdaPort] = await Promise.all([freePort(), freePort()]);
  const lambdaEndpoint = `http://127.0.0.1:${lambdaPort}`;
  const offline = await startOffline({
    httpPort,
    lambdaPort,
    env: { ...env, LOCAL_LAMBDA_ENDPOINT: opts.afterTurn === false ? '' : lambdaEndpoint },
    output: 'pipe',
  });
  const ddb = createDynamoClient({ endpoint: dynamodbEndpoint, maxAttempts: 3 });
  const keys = new ApiKeyStore({ client: ddb, tableName });
  return {
    baseUrl: offline.baseUrl,
    lambdaEndpoint,
    async createApiKey(tenant) {
      return (await keys.create(tenant)).key;
    },
    invoke: (functionKey, payload) => invokeLocal(lambdaEndpoint, functionKey, payload),
    log: () => offline.log(),
    async stop() {
      await offline.stop();
      ddb.destroy();
    },
  };
}
