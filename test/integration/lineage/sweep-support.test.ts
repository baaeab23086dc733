// Store operations behind the scheduled sweep (SPEC S1, S2, S3, I1).
import { randomInt, randomUUID } from 'node:crypto';
import { BatchWriteCommand, DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { FenceStaleError, type SessionRecord } from '../../../lib/lineage/index.js';
import { generationPrefix, messageSk, rotationShardOf, sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { commitInput, dynamoClient, makeStore, msg, msgs, newSession, rawItems, rawMeta, tableName } from './support.js';

const client = dynamoClient();
const doc = DynamoDBDocumentClient.from(client);
const store = makeStore(client);
afterAll(() => client.destroy());

/** Epoch ms far in the past and unique to this test, so other files' attempts never crowd the query. */
const ancientExpiry = () => 1_000_000 + randomInt(1, 1_000_000_000);

function beginAt(ref: SessionRef, leaseExpiresAt: number) {
  return store.beginAttempt(ref, { holder: `h-${randomUUID()}`, leaseExpiresAt, activityLabel: 'compaction started' });
}

async function expiredAttempts(now: number) {
  return (await store.listSweepWork(now, 1000)).attempts;
}

/** What a crashed attempt leaves behind: messages written under its pending child and its next generation. */
async function writeLeftovers(ref: SessionRef, pendingChildId: string, fence: number, child = 3, inPlace = 2) {
  const items = [
    ...Array.from({ length: child }, (_, i) => ({
      pk: sessionPk({ tenantId: ref.tenantId, sessionId: pendingChildId }),
      sk: messageSk(0, i + 1),
      generation: 0,
      seq: i + 1,
      body: JSON.stringify(msg(i)),
    })),
    ...Array.from({ length: inPlace }, (_, i) => ({
      pk: sessionPk(ref),
      sk: messageSk(fence, i + 1),
      generation: fence,
      seq: i + 1,
      body: JSON.stringify(msg(i)),
    })),
  ];
  await doc.send(new BatchWriteCommand({ RequestItems: { [tableName()]: items.map((Item) => ({ PutRequest: { Item } })) } }));
}

describe('expired attempts (S1)', () => {
  it('S1/S2: listSweepWork finds an attempt whose lease passed; cleanExpiredAttempt removes its leftovers and clears it', async () => {
    const expiry = ancientExpiry();
    const ref = await newSession(store, msgs(1, 3));
    const crashed = await beginAt(ref, expiry);
    await writeLeftovers(ref, crashed.attempt.pendingChildId, crashed.attempt.fence);
    const live = await newSession(store, msgs(1, 2));
    const fresh = await beginAt(live, expiry + 60_000);

    const found = await expiredAttempts(expiry + 1);
    const mine = found.filter((e) => e.ref.tenantId === ref.tenantId);
    expect(mine).toEqual([{ ref, attempt: crashed.attempt }]);
    expect(found.some((e) => e.attempt.attemptId === fresh.attempt.attemptId)).toBe(false);

    expect(await store.cleanExpiredAttempt(mine[0]!)).toEqual({ cleaned: true, orphanMessagesRemoved: 5 });
    expect(await rawItems(client, { tenantId: ref.tenantId, sessionId: crashed.attempt.pendingChildId })).toEqual([]);
    const meta = await rawMeta(client, ref);
    expect(meta?.attempt).toBeUndefined();
    expect(meta?.attemptShard).toBeUndefined();
    expect(meta?.leaseExpiresAt).toBeUndefined();
    expect(await store.readAll(ref)).toEqual(msgs(1, 3));
    expect((await expiredAttempts(expiry + 1)).filter((e) => e.ref.tenantId === ref.tenantId)).toEqual([]);

    // The fresh attempt was not touched.
    expect((await store.getSession(live))?.attempt).toEqual(fresh.attempt);
    // Idempotent, and the swept attempt can no longer commit.
    expect(await store.cleanExpiredAttempt(mine[0]!)).toEqual({ cleaned: false, orphanMessagesRemoved: 0 });
    await expect(store.commitRotation(ref, crashed, commitInput([msg(1)]))).rejects.toBeInstanceOf(FenceStaleError);
    expect(await store.children(ref)).toEqual([]);
  });

  it('S1: cleaning a replaced attempt (different attemptId) does nothing to the newer attempt', async () => {
    const ref = await newSession(store);
    const old = await beginAt(ref, ancientExpiry());
    const newer = await beginAt(ref, Date.now() + 60_000);
    expect(await store.cleanExpiredAttempt({ ref, attempt: old.attempt })).toEqual({ cleaned: false, orphanMessagesRemoved: 0 });
    expect((await store.getSession(ref))?.attempt).toEqual(newer.attempt);
    const out = await store.commitRotation(ref, newer, commitInput([msg(1)]));
    expect(out.child.sessionId).toBe(newer.attempt.pendingChildId);
  });

  it('S2: a crashed attempt replaced by a newer one before any sweep leaves no orphans: beginAttempt removes its leftovers', async () => {
    const ref = await newSession(store, msgs(1, 3));
    const crashed = await beginAt(ref, ancientExpiry());
    await writeLeftovers(ref, crashed.attempt.pendingChildId, crashed.attempt.fence);
    const crashedChild = { tenantId: ref.tenantId, sessionId: crashed.attempt.pendingChildId };
    expect(await rawItems(client, crashedChild)).toHaveLength(3);

    const newer = await beginAt(ref, Date.now() + 60_000);
    // Gone from the index with the replaced record, so the sweep could never have found these.
    expect(await rawItems(client, crashedChild)).toEqual([]);
    const parentItems = (await rawItems(client, ref)).map((i) => i.sk as string);
    expect(parentItems.filter((sk) => sk.startsWith(generationPrefix(crashed.attempt.fence)))).toEqual([]);
    expect(await store.readAll(ref)).toEqual(msgs(1, 3));
    expect(await store.readSnapshot(ref, newer)).toEqual(msgs(1, 3));
    expect((await store.getSession(ref))?.attempt).toEqual(newer.attempt);
  });

  it('S2: an in-place attempt whose late writes land after a newer attempt committed leaves no orphan generation', async () => {
    const ref = await newSession(store, msgs(1, 3));
    const slow = await beginAt(ref, ancientExpiry());
    const newer = await beginAt(ref, Date.now() + 60_000); // replaces slow, whose lease expired (nothing written yet)
    // The slow attempt's generation writes land only now, after it was replaced.
    await writeLeftovers(ref, slow.attempt.pendingChildId, slow.attempt.fence, 0, 2);
    await store.commitInPlace(ref, newer, commitInput([msg(9)]));
    expect((await store.getSession(ref))?.generation).toBe(newer.attempt.fence);

    await store.abandonAttempt(ref, slow.attempt, { commitStarted: true });
    const sks = (await rawItems(client, ref)).map((i) => i.sk as string);
    expect(sks.filter((sk) => sk.startsWith(generationPrefix(slow.attempt.fence)))).toEqual([]);
    expect(sks.filter((sk) => sk.startsWith(generationPrefix(newer.attempt.fence)))).toHaveLength(1);
    expect(await store.readAll(ref)).toEqual([msg(9)]);
  });

  it('S3: extendAttempt moves a live attempt out of the expired list; a replaced attempt is not extended', async () => {
    const expiry = ancientExpiry();
    const ref = await newSession(store);
    const a = await beginAt(ref, expiry);
    expect(await store.extendAttempt(ref, a.attempt, expiry + 10_000)).toBe(true);
    expect((await expiredAttempts(expiry + 1)).filter((e) => e.ref.tenantId === ref.tenantId)).toEqual([]);
    expect((await store.getSession(ref))?.attempt?.leaseExpiresAt).toBe(expiry + 10_000);
    await store.abandonAttempt(ref, a.attempt);
    await beginAt(ref, expiry);
    expect(await store.extendAttempt(ref, a.attempt, expiry + 20_000)).toBe(false);
  });

  it('S1: abandonAttempt after a commit started clears our attempt and its pending items; it is idempotent', async () => {
    const ref = await newSession(store);
    const a = await beginAt(ref, Date.now() + 60_000);
    await writeLeftovers(ref, a.attempt.pendingChildId, a.attempt.fence);
    await store.abandonAttempt(ref, a.attempt, { activityLabel: 'compaction failed', commitStarted: true });
    await store.abandonAttempt(ref, a.attempt, { commitStarted: true });
    expect((await store.getSession(ref))?.attempt).toBeUndefined();
    expect((await store.getSession(ref))?.lastActivity?.label).toBe('compaction failed');
    expect(await rawItems(client, { tenantId: ref.tenantId, sessionId: a.attempt.pendingChildId })).toEqual([]);
    expect(await store.readAll(ref)).toEqual(msgs(1, 6));
  });

  it('S3/I1: sweeping an attempt while it commits never leaves a child without its messages', async () => {
    for (let i = 0; i < 6; i++) {
      const ref = await newSession(store, msgs(1, 5));
      const a = await beginAt(ref, ancientExpiry());
      const compacted = [{ role: 'assistant', content: `summary ${i}` }, msg(5)];
      const [commit, clean] = await Promise.allSettled([
        store.commitRotation(ref, a, commitInput(compacted)),
        store.cleanExpiredAttempt({ ref, attempt: a.attempt }),
      ]);
      expect(clean.status).toBe('fulfilled');
      const children: SessionRecord[] = await store.children(ref);
      if (commit.status === 'fulfilled') {
        expect(children.map((c) => c.sessionId)).toEqual([a.attempt.pendingChildId]);
        expect(await store.readAll({ tenantId: ref.tenantId, sessionId: a.attempt.pendingChildId })).toEqual(compacted);
      } else {
        expect(commit.reason).toBeInstanceOf(FenceStaleError);
        expect(children).toEqual([]);
        expect(await store.readAll(ref)).toEqual(msgs(1, 5));
      }
    }
  });
});

describe('forks (S2)', () => {
  async function rawChild(parent: SessionRef, sessionId: string, createdAt = new Date().toISOString()) {
    const pk = sessionPk({ tenantId: parent.tenantId, sessionId });
    await doc.send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          pk,
          sk: 'META',
          tenantId: parent.tenantId,
          sessionId,
          parentSessionId: parent.sessionId,
          parentKey: sessionPk(parent),
          rotationShard: rotationShardOf(pk, 16),
          createdAt,
          generation: 0,
          messageCount: 0,
          lastSeq: 0,
          version: 1,
        },
      }),
    );
  }

  it('S2: findAllForks and findRecentForks report a parent given two children (raw PutItems simulating the bug)', async () => {
    const parent = await newSession(store);
    const ids = [randomUUID(), randomUUID()].sort();
    for (const id of ids) await rawChild(parent, id);
    const mine = (forks: { parent: SessionRef }[]) => forks.filter((f) => f.parent.tenantId === parent.tenantId);
    expect(mine(await store.findAllForks())).toEqual([{ parent, childSessionIds: ids }]);
    expect(mine(await store.findRecentForks(Date.now() - 60_000))).toEqual([{ parent, childSessionIds: ids }]);
  });

  it('S2: findRecentForks looks only at rotations since its point in time', async () => {
    const parent = await newSession(store);
    const long = new Date(Date.now() - 7 * 24 * 3600_000).toISOString();
    for (const id of [randomUUID(), randomUUID()]) await rawChild(parent, id, long);
    expect((await store.findRecentForks(Date.now() - 3600_000)).filter((f) => f.parent.tenantId === parent.tenantId)).toEqual([]);
    expect((await store.findAllForks()).filter((f) => f.parent.tenantId === parent.tenantId)).toHaveLength(1);
  });

  it('S2: findForks reports nothing for a healthy lineage', async () => {
    const root = await newSession(store);
    const first = await beginAt(root, Date.now() + 60_000);
    const mid = (await store.commitRotation(root, first, commitInput([msg(1)]))).child;
    const midRef = { tenantId: mid.tenantId, sessionId: mid.sessionId };
    const second = await beginAt(midRef, Date.now() + 60_000);
    const tip = (await store.commitRotation(midRef, second, commitInput([msg(2)]))).child;
    expect((await store.lineage(root)).map((s) => s.sessionId)).toEqual([root.sessionId, mid.sessionId, tip.sessionId]);
    expect((await store.findAllForks()).filter((f) => f.parent.tenantId === root.tenantId)).toEqual([]);
    expect((await store.findRecentForks(Date.now() - 60_000)).filter((f) => f.parent.tenantId === root.tenantId)).toEqual([]);
  });
});
