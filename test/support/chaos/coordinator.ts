// The real lease + store wired the way the runtime wires them, on servers the caller picks
// (the shared test stack, or nodes a chaos test owns and kills).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Redis } from 'ioredis';
import { createDynamoClient, createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { SessionLease } from '../../../lib/lease/index.js';
import type { Item } from '../../../lib/items/types.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { SessionRef } from '../../../lib/session-ref.js';

export interface Coordinator {
  redis: Redis[];
  ddb: DynamoDBClient;
  store: DynamoLineageStore;
  lease: SessionLease;
  tableName: string;
  close(): Promise<void>;
}

export interface CoordinatorOptions {
  redisUrls?: readonly string[];
  /** Use these clients instead of creating them (they are not closed by close()). */
  redisClients?: Redis[];
  dynamodbEndpoint?: string;
  tableName?: string;
  keyPrefix?: string;
  /** The store's transaction size (small: a compaction takes the write-first path without megabytes). */
  transactionBytes?: number;
}

export async function makeCoordinator(opts: CoordinatorOptions = {}): Promise<Coordinator> {
  const ownRedis = !opts.redisClients;
  const redis = opts.redisClients ?? createRedisClients(opts.redisUrls ?? (process.env.REDIS_URLS ?? '').split(','));
  await waitForRedis(redis);
  const ddb = createDynamoClient({ endpoint: opts.dynamodbEndpoint ?? process.env.DYNAMODB_ENDPOINT });
  const tableName = opts.tableName ?? process.env.TABLE_NAME ?? 'session-lineage-test';
  const store = new DynamoLineageStore({
    client: ddb,
    tableName,
    ...(opts.transactionBytes ? { transactionBytes: opts.transactionBytes } : {}),
  });
  const lease = new SessionLease({ clients: redis, ...(opts.keyPrefix ? { keyPrefix: opts.keyPrefix } : {}) });
  return {
    redis,
    ddb,
    store,
    lease,
    tableName,
    async close() {
      if (ownRedis) for (const c of redis) c.disconnect();
      ddb.destroy();
    },
  };
}

/** A new session holding `items` (appended as one request's worth at a time). */
export async function seedConversation(store: DynamoLineageStore, tenantId: string, items: readonly Item[]): Promise<SessionRef> {
  const r = await store.createSession({ tenantId, source: 'chaos' });
  if (r.replayed) throw new Error('unexpected replay');
  const ref = { tenantId, sessionId: r.session.sessionId };
  for (let i = 0; i < items.length; i += 98) await store.appendItems(ref, { prepare: asIs(items.slice(i, i + 98)) });
  return ref;
}
