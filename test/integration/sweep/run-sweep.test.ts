// runSweep against DynamoDB Local. Each file gets its own table: the sweep scans the whole
// table, and must neither see nor clean other test files' attempts.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeOnOwnTable } from './own-table.js';
import { createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { SessionLease } from '../../../lib/lease/session-lease.js';
import type { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { BegunAttempt } from '../../../lib/lineage/types.js';
import { sessionKey, type SessionRef } from '../../../lib/session-ref.js';
import { runSweep } from '../../../lib/sweep/run-sweep.js';
import { attemptShardOf, sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import { forgeChild, killedRotation, messageItemCount, transcript } from './killed-invocation.js';

const endpoint = process.env.DYNAMODB_ENDPOINT!;
let tableName: string;
let ddb: DynamoDBClient;
let store: DynamoLineageStore;

beforeAll(async () => {
  ({ ddb, tableName, store } = await storeOnOwnTable('sweep'));
});
afterAll(() => ddb.destroy());

async function session(): Promise<SessionRef> {
  const r = await store.createSession({ tenantId: `t-${randomUUID()}`, source: 'sweep-test' });
  if (r.replayed) throw new Error('unexpected replay');
  const ref = { tenantId: r.session.tenantId, sessionId: r.session.sessionId };
  await store.appendItems(ref, { prepare: asIs(transcript(6)) });
  return ref;
}

/** A compaction that began and is still running: its lease runs well past the sweeps below. */
function liveAttempt(ref: SessionRef, leaseExpiresAt: number, holder = `live-${randomUUID()}`) {
  return store.beginAttempt(ref, { holder, leaseExpiresAt, activityLabel: 'compaction started' });
}

function commit(ref: SessionRef, begun: BegunAttempt) {
  const compacted = transcript(2, 5);
  return store.commitRotation(ref, begun, { compacted, tokenEstimates: [1, 1], activityLabel: 'compaction completed' });
}

async function rotate(ref: SessionRef): Promise<string> {
  const done = await commit(ref, await liveAttempt(ref, Date.now() + 60_000));
  return done.child.sessionId;
}

describe('runSweep (SPEC S1-S3)', () => {
  it('S1/S2: cleans an attempt a killed invocation left once its lease expired, removing its orphan child messages', async () => {
    const ref = await session();
    const killed = await killedRotation({ endpoint, tableName, ref, leaseExpiresAt: Date.now() + 60_000 });
    const pending = { tenantId: ref.tenantId, sessionId: killed.attempt.pendingChildId };
    expect(await messageItemCount(ddb, tableName, pending)).toBe(killed.orphanMessages);
    expect((await store.getSession(ref))?.attempt?.attemptId).toBe(killed.attempt.attemptId);

    // Before the lease expires, the attempt is not the sweep's business.
    const early = await runSweep({ store, now: () => Date.now() });
    expect(early).toMatchObject({ expiredAttemptsCleaned: 0, orphanMessagesRemoved: 0 });
    expect((await store.getSession(ref))?.attempt?.attemptId).toBe(killed.attempt.attemptId);

    const r = await runSweep({ store, now: () => Date.now() + 120_000 });
    expect(r).toMatchObject({ expiredAttemptsCleaned: 1, orphanMessagesRemoved: killed.orphanMessages, forksFound: 0, cleanupFailures: 0 });
    const after = await store.getSession(ref);
    expect(after?.attempt).toBeUndefined();
    expect(after?.endedAt).toBeUndefined();
    expect(await messageItemCount(ddb, tableName, pending)).toBe(0);
    expect(await store.children(ref)).toEqual([]);
    // The session is compactable again: a new attempt can begin and commit.
    expect(typeof (await rotate(ref))).toBe('string');

    // Nothing left for a second run.
    expect(await runSweep({ store, now: () => Date.now() + 120_000 })).toMatchObject({
      expiredAttemptsCleaned: 0,
      orphanMessagesRemoved: 0,
    });
  });

  it('S2: reports a parent with two children (a fork written with raw PutItems), and not one with a single child', async () => {
    const forked = await session();
    const realChild = await rotate(forked);
    const forgedChild = await forgeChild(ddb, tableName, forked);
    const healthy = await session();
    await rotate(healthy);

    const r = await runSweep({ store });
    expect(r.forksFound).toBe(1);
    expect(r.forks).toEqual([{ parent: forked, childSessionIds: [realChild, forgedChild].sort() }]);
  });

  it('S3: two sweeps at once clean an expired attempt exactly once and never touch a live attempt, which still commits', async () => {
    const abandoned = await session();
    const killed = await killedRotation({ endpoint, tableName, ref: abandoned, leaseExpiresAt: Date.now() + 60_000 });
    const live = await session();
    const begun = await liveAttempt(live, Date.now() + 3_600_000);

    const now = () => Date.now() + 120_000;
    const [a, b] = await Promise.all([runSweep({ store, now }), runSweep({ store, now })]);
    expect(a.expiredAttemptsCleaned + b.expiredAttemptsCleaned).toBe(1);
    expect(a.cleanupFailures + b.cleanupFailures).toBe(0);
    // Each sweep removes at most what was there; together they leave nothing.
    for (const r of [a, b]) expect(r.orphanMessagesRemoved).toBeLessThanOrEqual(killed.orphanMessages);
    expect(await messageItemCount(ddb, tableName, { tenantId: abandoned.tenantId, sessionId: killed.attempt.pendingChildId })).toBe(0);

    const stillLive = await store.getSession(live);
    expect(stillLive?.attempt).toEqual(begun.attempt);
    const committed = await commit(live, begun);
    expect(committed.parent.childSessionId).toBe(begun.attempt.pendingChildId);
    expect((await store.children(live)).map((c) => c.sessionId)).toEqual([begun.attempt.pendingChildId]);
  });

  it('S3: a sweep racing a live compaction commit leaves exactly one child', async () => {
    const ref = await session();
    const begun = await liveAttempt(ref, Date.now() + 3_600_000);
    const [sweep, committed] = await Promise.all([runSweep({ store, now: () => Date.now() }), commit(ref, begun)]);
    expect(sweep.expiredAttemptsCleaned).toBe(0);
    expect(committed.child.sessionId).toBe(begun.attempt.pendingChildId);
    expect(await store.children(ref)).toHaveLength(1);
    expect(await messageItemCount(ddb, tableName, { tenantId: ref.tenantId, sessionId: begun.attempt.pendingChildId })).toBe(2);
  });

  it('S1/L7: an attempt whose recorded expiry passed but whose Redis lease is still held is left alone until the lease goes', async () => {
    const redis = createRedisClients(process.env.REDIS_URLS!.split(','));
    await waitForRedis(redis);
    try {
      const lease = new SessionLease({ clients: redis });
      const leaseHeld = async (r: SessionRef) => (await lease.holderOf(sessionKey(r))) !== null;
      const ref = await session();
      const got = await lease.tryAcquire(sessionKey(ref), { ttlMs: 30_000, holder: 'slow-holder' });
      if (!got.acquired) throw new Error('lease not acquired');
      // The record says the lease expired (a refresher kept it alive in Redis since).
      const begun = await liveAttempt(ref, Date.now() - 1, got.token);

      const held = await runSweep({ store, leaseHeld });
      expect(held).toMatchObject({ expiredAttemptsCleaned: 0, liveAttemptsSkipped: 1 });
      expect((await store.getSession(ref))?.attempt).toEqual(begun.attempt);

      expect(await lease.release(got)).toEqual({ released: true });
      const freed = await runSweep({ store, leaseHeld });
      expect(freed).toMatchObject({ expiredAttemptsCleaned: 1, liveAttemptsSkipped: 0 });
      expect((await store.getSession(ref))?.attempt).toBeUndefined();
    } finally {
      redis.forEach((r) => r.disconnect());
    }
  });

  it('S1: a cleanup that throws is counted and reported, and the sweep goes on with the rest', async () => {
    const first = await session();
    const second = await session();
    for (const ref of [first, second]) await liveAttempt(ref, Date.now() - 1);
    const errors: string[] = [];
    let calls = 0;
    const flaky = {
      listSweepWork: (now: number, limit: number) => store.listSweepWork(now, limit),
      runTask: (t: Parameters<DynamoLineageStore['runTask']>[0]) => store.runTask(t),
      findRecentForks: (since: number) => store.findRecentForks(since),
      readSweepCheckpoint: () => store.readSweepCheckpoint(),
      saveSweepCheckpoint: (at: number) => store.saveSweepCheckpoint(at),
      cleanExpiredAttempt: async (e: Parameters<DynamoLineageStore['cleanExpiredAttempt']>[0]) => {
        if (calls++ === 0) throw new Error('throttled beyond retries');
        return store.cleanExpiredAttempt(e);
      },
    };
    const r = await runSweep({ store: flaky, onCleanupError: (err) => errors.push((err as Error).message) });
    expect(r).toMatchObject({ expiredAttemptsCleaned: 1, cleanupFailures: 1 });
    expect(errors).toEqual(['throttled beyond retries']);
    // The next run finishes the job.
    expect(await runSweep({ store })).toMatchObject({ expiredAttemptsCleaned: 1, cleanupFailures: 0 });
  });

  it('S1: one run pages through more expired attempts than a page holds, and stops at maxPages', async () => {
    const refs = await Promise.all(Array.from({ length: 5 }, () => session()));
    for (const ref of refs) await liveAttempt(ref, Date.now() - 1);
    const capped = await runSweep({ store, pageSize: 2, maxPages: 1 });
    expect(capped.expiredAttemptsCleaned).toBe(2);
    const rest = await runSweep({ store, pageSize: 2 });
    expect(rest.expiredAttemptsCleaned).toBe(3);
    for (const ref of refs) expect((await store.getSession(ref))?.attempt).toBeUndefined();
  });

  it('S1: attempts the sweep keeps skipping in one shard do not starve expired attempts in the other shards', async () => {
    const tenantId = `t-${randomUUID()}`;
    /** A session whose attempt lands in the wanted shard of the sparse index. */
    const sessionIn = async (wanted: (shard: string) => boolean): Promise<SessionRef> => {
      for (;;) {
        const ref = { tenantId, sessionId: randomUUID() };
        if (!wanted(attemptShardOf(sessionPk(ref), store['table'].attemptShards))) continue;
        await store.createSession(ref);
        await store.appendItems(ref, { prepare: asIs(transcript(2)) });
        return ref;
      }
    };
    const stuck = await Promise.all(Array.from({ length: 3 }, () => sessionIn((s) => s === 'A#0')));
    const other = await sessionIn((s) => s !== 'A#0');
    for (const ref of [...stuck, other]) await liveAttempt(ref, Date.now() - 1);
    const stuckIds = new Set(stuck.map((r) => r.sessionId));

    const r = await runSweep({ store, pageSize: 2, leaseHeld: async (ref) => stuckIds.has(ref.sessionId) });
    expect((await store.getSession(other))?.attempt).toBeUndefined();
    expect(r.liveAttemptsSkipped).toBeGreaterThanOrEqual(2);
    for (const ref of stuck) expect((await store.getSession(ref))?.attempt).toBeDefined();
  });

  it('P3/S1: an archive task whose background run was dropped (a frozen container) is run by the sweep once due', async () => {
    const ref = await session();
    const begun = await liveAttempt(ref, Date.now() + 60_000);
    const compacted = transcript(1, 3);
    const out = await store.commitInPlace(ref, begun, { compacted, tokenEstimates: [1], activityLabel: 'compaction completed' });
    const oldItems = async () => await messageItemCount(ddb, tableName, ref);
    expect(await oldItems()).toBe(7);
    const early = await runSweep({ store });
    expect(early.tasksRun).toBe(0);
    const due = await runSweep({ store, now: () => out.archive.dueAt + 1 });
    expect(due.tasksRun).toBe(1);
    // The old generation now carries its TTL; the live one does not; nothing is left to do.
    expect(await runSweep({ store, now: () => out.archive.dueAt + 1 })).toMatchObject({ tasksRun: 0 });
    expect(await store.readAll(ref)).toEqual(compacted);
  });

  it("A6/S1: a deleted session's purge is finished by the sweep when the background purge did not run", async () => {
    const ref = await session();
    // A store whose background work never happens (the container froze right after answering).
    const frozen = Object.create(store) as DynamoLineageStore;
    Object.defineProperty(frozen, 'runTask', { value: () => new Promise(() => undefined) });
    await frozen.deleteSession(ref);
    expect(await messageItemCount(ddb, tableName, ref)).toBe(6);
    const r = await runSweep({ store, now: () => Date.now() + 1000 });
    expect(r.tasksRun).toBeGreaterThanOrEqual(1);
    expect(await messageItemCount(ddb, tableName, ref)).toBe(0);
    expect(await store.getSession(ref)).toBeNull();
  });
});
