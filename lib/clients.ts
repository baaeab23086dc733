// Client factories shared by handlers, tests, CLI and benchmarks, so every Redis and
// DynamoDB client in the project is configured one way.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Redis } from 'ioredis';

export interface RedisClientOptions {
  /** Per-command connect timeout; small so a dead node is noticed in milliseconds. */
  connectTimeoutMs?: number;
}

/**
 * One ioredis client per Redlock node. enableOfflineQueue=false makes a command on a
 * disconnected client fail at once instead of queueing; maxRetriesPerRequest=1 bounds
 * retries, so quorum loss surfaces in milliseconds rather than the 40 s reconnect budget.
 */
export function createRedisClient(url: string, opts: RedisClientOptions = {}): Redis {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: opts.connectTimeoutMs ?? 1000,
    commandTimeout: 2000,
    // Keep reconnecting in the background (a restarted node rejoins the quorum), capped at 1 s.
    retryStrategy: (times) => Math.min(50 * times, 1000),
    lazyConnect: false,
  });
  // Errors surface per command; an unhandled 'error' event would crash the process.
  client.on('error', () => undefined);
  return client;
}

export function createRedisClients(urls: readonly string[], opts: RedisClientOptions = {}): Redis[] {
  return urls.map((u) => createRedisClient(u, opts));
}

/** Resolves once every client is connected or failed; lets callers start in a known state. */
export async function waitForRedis(clients: readonly Redis[], timeoutMs = 2000): Promise<void> {
  await Promise.all(
    clients.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.status === 'ready') return resolve();
          const t = setTimeout(resolve, timeoutMs);
          c.once('ready', () => {
            clearTimeout(t);
            resolve();
          });
        }),
    ),
  );
}

export interface DynamoClientOptions {
  endpoint?: string | undefined;
  region?: string;
  maxAttempts?: number;
}

export function createDynamoClient(opts: DynamoClientOptions = {}): DynamoDBClient {
  return new DynamoDBClient({
    region: opts.region ?? process.env.AWS_REGION ?? 'us-east-1',
    ...(opts.endpoint
      ? { endpoint: opts.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
    // Our store does its own bounded, typed retries for conflicts and throttling.
    maxAttempts: opts.maxAttempts ?? 1,
  });
}
