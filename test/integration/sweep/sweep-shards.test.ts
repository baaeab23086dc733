// S1 over many shards (issue 15): with 64 attemptsByExpiry shards, one sweep run finds every
// expired attempt, wherever its session hashed, while a few shards stay stuck behind attempts
// whose lease is still held in Redis; the shard queries run in parallel, at most 16 at a time.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { SessionLease } from '../../../lib/lease/session-lease.js';
import { attemptShardOf, SHARD_QUERY_CONCURRENCY, sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { sessionKey, type SessionRef } from '../../../lib/session-ref.js';
import { runSweep } from '../../../lib/sweep/run-sweep.js';
import { mapLimit } from '../../fixtures/map-limit.js';
import { storeOnOwnTable } from './own-table.js';

const SHARDS = 64;
const EXPIRED = 200;
/** Shards whose attempts are still held (a refresher kept the lease alive past the recorded expiry). */
const STUCK = new Set(['A#0', 'A#1', 'A#2']);

let ddb: DynamoDBClient;
let store: DynamoLineageStore;
let redis: Redis[];
let lease: SessionLease;

/** Attempt-index shard queries in flight, and the shards each listing asked for. */
const queries = { inFlight: 0, peak: 0, shards: [] as string[] };

beforeAll(async () => {
  const own = await storeOnOwnTable('sweep-shards');
  ddb = own.ddb;
  store = new DynamoLineageStore({ client: ddb, tableName: own.tableName, attemptShards: SHARDS });
  ddb.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as { IndexName?: string; ExpressionAttributeValues?: Record<string, unknown> };
      if (input.IndexName !== 'attemptsByExpiry') return next(args);
      const shard = input.ExpressionAttributeValues?.[':s'];
      queries.shards.push(typeof shard === 'string' ? shard : String((shard as { S?: string })?.S));
      queries.peak = Math.max(queries.peak, ++queries.inFlight);
      try {
        return await next(args);
      } finally {
        queries.inFlight--;
      }
    },
    { step: 'initialize', name: 'count-shard-queries' },
  );
  redis = createRedisClients(process.env.REDIS_URLS!.split(','));
  await waitForRedis(redis);
  lease = new SessionLease({ clients: redis });
});
afterAll(() => {
  redis?.forEach((r) => r.disconnect());
  ddb?.destroy();
});

const held: Awaited<ReturnType<SessionLease['tryAcquire']>>[] = [];

/** A session whose compaction began and whose recorded lease expired a minute ago (in a stuck shard: still held in Redis). */
async function expired(tenantId: string): Promise<SessionRef> {
  const r = await store.createSession({ tenantId, source: 'sweep-shards' });
  if (r.replayed) throw new Error('unexpected replay');
  const ref = { tenantId, sessionId: r.session.sessionId };
  const shard = attemptShardOf(sessionPk(ref), SHARDS);
  const got = STUCK.has(shard) ? await lease.tryAcquire(sessionKey(ref), { ttlMs: 60_000, holder: 'still-compacting' }) : undefined;
  if (got && !got.acquired) throw new Error('lease not acquired');
  if (got) held.push(got);
  await store.beginAttempt(ref, {
    holder: got?.token ?? `crashed-${randomUUID()}`,
    leaseExpiresAt: Date.now() - 60_000,
    activityLabel: 'compaction started',
  });
  return ref;
}

describe('sweep over 64 attemptsByExpiry shards (S1, issue 15)', () => {
  it('S1: one run cleans all 200 expired attempts spread over the shards, leaves the held ones, queries every shard with at most 16 in flight', async () => {
    const tenantId = `t-${randomUUID()}`;
    const refs = await mapLimit(Array.from({ length: EXPIRED }), 16, () => expired(tenantId));
    const shardOf = (ref: SessionRef) => attemptShardOf(sessionPk(ref), SHARDS);
    const stuck = refs.filter((r) => STUCK.has(shardOf(r)));
    const free = refs.filter((r) => !STUCK.has(shardOf(r)));
    // The sessions really are spread: most shards hold some, the stuck ones included.
    expect(new Set(refs.map(shardOf)).size).toBeGreaterThan(48);
    expect(stuck.length).toBeGreaterThan(0);

    queries.shards.length = 0;
    queries.peak = 0;
    const r = await runSweep({ store, leaseHeld: async (ref) => (await lease.holderOf(sessionKey(ref))) !== null });

    expect(r).toMatchObject({ expiredAttemptsCleaned: free.length, cleanupFailures: 0 });
    expect(r.liveAttemptsSkipped).toBe(stuck.length);
    const after = await mapLimit(refs, 16, (ref) => store.getSession(ref));
    refs.forEach((ref, i) => expect(after[i]?.attempt === undefined, ref.sessionId).toBe(!STUCK.has(shardOf(ref))));

    // Every listing page asked all 64 shards, never more than 16 at once.
    const listings = queries.shards.length / SHARDS;
    expect(Number.isInteger(listings) && listings >= 1).toBe(true);
    for (let page = 0; page < listings; page++) {
      expect(new Set(queries.shards.slice(page * SHARDS, (page + 1) * SHARDS)).size).toBe(SHARDS);
    }
    expect(queries.peak).toBeLessThanOrEqual(SHARD_QUERY_CONCURRENCY);
    expect(queries.peak).toBeGreaterThan(1);

    // Once the leases are gone the stuck shards drain too.
    for (const h of held) if (h.acquired) expect(await lease.release(h)).toEqual({ released: true });
    expect(await runSweep({ store, leaseHeld: async (ref) => (await lease.holderOf(sessionKey(ref))) !== null })).toMatchObject({
      expiredAttemptsCleaned: stuck.length,
      liveAttemptsSkipped: 0,
    });
  }, 180_000);
});
