// Everything a handler needs, built once per Lambda container from lib/config.ts and
// reused across invocations (warm starts skip the Redis handshakes).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Redis } from 'ioredis';
import { ApiKeyStore } from './api/api-keys.js';
import { createDynamoClient, createRedisClients, waitForRedis } from './clients.js';
import { compact } from './compaction/compact.js';
import type { CompactionLogger, CompactionOutcome, CompactRequest } from './compaction/types.js';
import { engineFromConfig } from './compressors/index.js';
import type { CompressionEngine } from './compressors/types.js';
import { loadConfig, redisUrls, type Config } from './config.js';
import { assertRedisVersion, SessionLease } from './lease/session-lease.js';
import { DynamoLineageStore } from './lineage/dynamo/store.js';

export interface Runtime {
  config: Config;
  store: DynamoLineageStore;
  lease: SessionLease;
  engine: CompressionEngine;
  apiKeys: ApiKeyStore;
  /** One compaction attempt with this runtime's lease, store and engine (SPEC C1-C13). */
  compact(req: CompactRequest): Promise<CompactionOutcome>;
  /** Disconnects Redis and DynamoDB clients and forgets the cached runtime. */
  close(): Promise<void>;
}

export interface RuntimeOptions {
  logger?: CompactionLogger;
}

let cached: Promise<Runtime> | undefined;

/** Cached per process (Lambda container reuse); a failed build is not cached, so the next call retries. */
export function getRuntime(env: NodeJS.ProcessEnv = process.env, opts: RuntimeOptions = {}): Promise<Runtime> {
  if (!cached) {
    const building = buildRuntime(env, opts);
    cached = building;
    building.catch(() => {
      if (cached === building) cached = undefined;
    });
  }
  return cached;
}

export async function buildRuntime(env: NodeJS.ProcessEnv = process.env, opts: RuntimeOptions = {}): Promise<Runtime> {
  const config = loadConfig(env);
  const dynamo: DynamoDBClient = createDynamoClient({ endpoint: config.DYNAMODB_ENDPOINT, region: config.AWS_REGION });
  const redis: Redis[] = createRedisClients(redisUrls(config));
  // Commands fail fast on a disconnected client (enableOfflineQueue: false): connect first.
  await waitForRedis(redis);
  await assertRedisVersion(redis);
  const store = new DynamoLineageStore({ client: dynamo, tableName: config.TABLE_NAME });
  const lease = new SessionLease({ clients: redis });
  const engine = engineFromConfig(config.engine);
  const apiKeys = new ApiKeyStore({ client: dynamo, tableName: config.TABLE_NAME });
  const runtime: Runtime = {
    config,
    store,
    lease,
    engine,
    apiKeys,
    compact: (req) =>
      compact(
        { lease, store, engine, leaseTtlMs: config.LEASE_TTL_MS, ...(opts.logger ? { logger: opts.logger } : {}) },
        req,
      ),
    async close() {
      if (cached && (await cached.catch(() => undefined)) === runtime) cached = undefined;
      redis.forEach((r) => r.disconnect());
      dynamo.destroy();
    },
  };
  return runtime;
}
