// The local stack: N redis-server nodes + DynamoDB Local + the table. Used by `npm start`,
// `npm run stack` and the vitest global setup. REDIS_URLS / DYNAMODB_ENDPOINT point it
// at servers the user already runs instead of starting new ones.
import { createDynamoClient } from '../../lib/clients.js';
import { ensureTable } from '../table.js';
import { startDynamoDbLocal, startRedis, type LocalProcess } from './processes.js';

export interface LocalStack {
  redisUrls: string[];
  dynamodbEndpoint: string;
  tableName: string;
  /** Processes this stack started (empty for user-provided servers). */
  processes: LocalProcess[];
  stop(): Promise<void>;
}

export interface LocalStackOptions {
  redisNodes?: number;
  tableName?: string;
  env?: NodeJS.ProcessEnv;
}

export async function startLocalStack(opts: LocalStackOptions = {}): Promise<LocalStack> {
  const env = opts.env ?? process.env;
  const tableName = opts.tableName ?? env.TABLE_NAME ?? 'session-lineage';
  const processes: LocalProcess[] = [];
  const stop = async () => {
    await Promise.all(processes.map((p) => p.stop()));
  };
  try {
    const redisFromEnv = env.REDIS_URLS?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const [redisUrls, dynamodbEndpoint] = await Promise.all([
      redisFromEnv?.length
        ? Promise.resolve(redisFromEnv)
        : Promise.all(Array.from({ length: opts.redisNodes ?? 3 }, () => startRedis())).then((ps) => {
            processes.push(...ps);
            return ps.map((p) => p.url);
          }),
      env.DYNAMODB_ENDPOINT
        ? Promise.resolve(env.DYNAMODB_ENDPOINT)
        : startDynamoDbLocal().then((p) => {
            processes.push(p);
            return p.url;
          }),
    ]);
    const ddb = createDynamoClient({ endpoint: dynamodbEndpoint, maxAttempts: 3 });
    try {
      await ensureTable(ddb, tableName);
    } finally {
      ddb.destroy();
    }
    return { redisUrls, dynamodbEndpoint, tableName, processes, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Environment variables that point lib/config.ts at this stack. */
export function stackEnv(stack: LocalStack): Record<string, string> {
  return {
    REDIS_URLS: stack.redisUrls.join(','),
    DYNAMODB_ENDPOINT: stack.dynamodbEndpoint,
    TABLE_NAME: stack.tableName,
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
  };
}
