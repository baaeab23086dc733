// The local stack: N redis-server nodes + DynamoDB Local + the table. Used by `npm start`,
// `npm run stack` and the vitest global setup. REDIS_URLS / DYNAMODB_ENDPOINT point it
// at servers the user already runs instead of starting new ones.
import { createDynamoClient } from '../../lib/aws-clients.js';
import { ControlRefusal } from './control.js';
import { ensureTable } from '../table.js';
import { startDynamoDbLocal, startRedis, type LocalProcess } from './processes.js';

export interface LocalStack {
  redisUrls: string[];
  dynamodbEndpoint: string;
  tableName: string;
  /** Processes this stack started (empty for user-provided servers); a restarted node replaces its entry. */
  processes: LocalProcess[];
  /**
   * Starts a Redis node of this stack that died again, on its port (so every client's URL stays
   * right); resolves with the new process. Refuses a node that is running or is not ours.
   */
  restartRedis(name: string): Promise<LocalProcess>;
  stop(): Promise<void>;
}

export interface LocalStackOptions {
  redisNodes?: number;
  tableName?: string;
  env?: NodeJS.ProcessEnv;
  /** DynamoDB Local keeps its data here (in memory when unset: the test suite's throwaway stack). */
  dynamoDbPath?: string;
  /** Each process in its own process group (see RedisOptions.detached): `npm start` stops them itself. */
  detached?: boolean;
}

export async function startLocalStack(opts: LocalStackOptions = {}): Promise<LocalStack> {
  const env = opts.env ?? process.env;
  const tableName = opts.tableName ?? env.TABLE_NAME ?? 'session-lineage';
  const processes: LocalProcess[] = [];
  const detached = opts.detached ?? false;
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
        : Promise.all(Array.from({ length: opts.redisNodes ?? 3 }, () => startRedis({ detached }))).then((ps) => {
            processes.push(...ps);
            return ps.map((p) => p.url);
          }),
      env.DYNAMODB_ENDPOINT
        ? Promise.resolve(env.DYNAMODB_ENDPOINT)
        : startDynamoDbLocal(undefined, { detached, ...(opts.dynamoDbPath ? { dbPath: opts.dynamoDbPath } : {}) }).then((p) => {
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
    const restartRedis = async (name: string): Promise<LocalProcess> => {
      const i = processes.findIndex((p) => p.name === name && p.name.startsWith('redis'));
      const old = processes[i];
      if (!old) {
        const ours = processes.filter((p) => p.name.startsWith('redis')).map((p) => p.name);
        throw new ControlRefusal(
          `no Redis node ${name} in this stack (its nodes: ${ours.join(', ') || 'none, REDIS_URLS points elsewhere'})`,
        );
      }
      if (!old.exited) throw new ControlRefusal(`${name} (pid ${old.pid}) is running; only a node that died can be restarted`);
      const started = await startRedis({ port: old.port, detached });
      processes[i] = started;
      return started;
    };
    return { redisUrls, dynamodbEndpoint, tableName, processes, restartRedis, stop };
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
