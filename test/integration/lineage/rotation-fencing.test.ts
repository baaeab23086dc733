// Rotation under contention and fencing, on DynamoDB Local (SPEC I1, I2, C10, L6, C3).
import { randomUUID } from 'node:crypto';
import { PutCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import {
  FenceStaleError,
  LineageError,
  RotationLostError,
  SessionEndedError,
  type RotationCommitted,
} from '../../../lib/lineage/index.js';
import { sessionPk } from '../../../lib/lineage/keys.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { begin, dynamoClient, makeStore, msg, msgs, newSession, rawItems, rawMeta, tableName } from './support.js';

const client = dynamoClient();
const store = makeStore(client);
afterAll(() => client.destroy());

describe('rotation commit', () => {
  it('C10: one transaction ends the parent and creates the child with compacted messages', async () => {
    const ref = await newSession(store, msgs(1, 8));
    const begun = await begin(store, ref);
    expect(begun.watermark).toBe(8);
    expect(begun.messages).toEqual(msgs(1, 8));

    const summary = [{ role: 'user' as const, content: 'summary' }, msg(8)];
    const out = await store.commitRotation(ref, begun.attempt, summary);

    expect(out.child.sessionId).toBe(begun.attempt.pendingChildId);
    expect(out.child.parentSessionId).toBe(ref.sessionId);
    expect(out.parent.endReason).toBe('compression');
    expect(out.parent.childSessionId).toBe(out.child.sessionId);
    const childRef = { tenantId: ref.tenantId, sessionId: out.child.sessionId };
    expect(await store.readMessages(childRef)).toEqual(summary);
    const parent = await store.getSession(ref);
    expect(parent?.endedAt).toBeDefined();
    expect(parent?.attempt).toBeUndefined();
    expect((await rawMeta(client, ref))?.attemptShard).toBeUndefined();
    expect((await store.lineage(childRef)).map((s) => s.sessionId)).toEqual([ref.sessionId, childRef.sessionId]);
    expect((await store.lineage(ref)).map((s) => s.sessionId)).toEqual([ref.sessionId, childRef.sessionId]);
    expect((await store.children(ref)).map((s) => s.sessionId)).toEqual([childRef.sessionId]);
  });

  it('I1/I2/C10: 50 concurrent begin+commit races for one parent yield exactly one child; losers get typed errors and leave nothing', async () => {
    const ref = await newSession(store, msgs(1, 10));
    const racers = Array.from({ length: 50 }, (_, i) => `holder-${i}-${randomUUID()}`);
    const pendingIds: string[] = [];
    const results = await Promise.allSettled(
      racers.map(async (holder) => {
        const begun = await begin(store, ref, holder);
        pendingIds.push(begun.attempt.pendingChildId);
        return store.commitRotation(ref, begun.attempt, [{ role: 'user', content: `summary by ${holder}` }]);
      }),
    );

    const winners = results.filter((r): r is PromiseFulfilledResult<RotationCommitted> => r.status === 'fulfilled');
    const losers = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(winners).toHaveLength(1);
    for (const l of losers) {
      expect(l.reason).toBeInstanceOf(LineageError);
      expect([FenceStaleError, RotationLostError, SessionEndedError].some((E) => l.reason instanceof E)).toBe(true);
    }
    const winner = winners[0]!.value;
    const children = await store.children(ref);
    expect(children.map((c) => c.sessionId)).toEqual([winner.child.sessionId]);
    expect((await store.getSession(ref))?.childSessionId).toBe(winner.child.sessionId);
    // No loser left pending child messages behind.
    const leftovers = await Promise.all(
      pendingIds
        .filter((id) => id !== winner.child.sessionId)
        .map((sessionId) => rawItems(client, { tenantId: ref.tenantId, sessionId })),
    );
    expect(leftovers.flat()).toEqual([]);
    expect((await store.findForks()).filter((f) => f.parent.tenantId === ref.tenantId)).toEqual([]);
  });

  it('L6: a stale fence is refused: A begins, B begins with a higher fence, A commits -> FenceStaleError; B commits', async () => {
    const ref = await newSession(store);
    const a = await begin(store, ref, 'A');
    const b = await begin(store, ref, 'B');
    expect(b.attempt.fence).toBeGreaterThan(a.attempt.fence);

    await expect(store.commitRotation(ref, a.attempt, [msg(1)])).rejects.toBeInstanceOf(FenceStaleError);
    expect(await rawItems(client, { tenantId: ref.tenantId, sessionId: a.attempt.pendingChildId })).toEqual([]);
    expect((await store.getSession(ref))?.attempt?.attemptId).toBe(b.attempt.attemptId);

    const out = await store.commitRotation(ref, b.attempt, [msg(1)]);
    expect(out.child.sessionId).toBe(b.attempt.pendingChildId);
    expect(await store.children(ref)).toHaveLength(1);
  });

  it('L6: beginAttempt with a fence that is not newer is refused', async () => {
    const ref = await newSession(store);
    const fence = await store.nextFence(sessionKey(ref));
    await store.beginAttempt(ref, { holder: 'x', fence, leaseExpiresAt: Date.now() + 1000 });
    await expect(store.beginAttempt(ref, { holder: 'y', fence, leaseExpiresAt: Date.now() + 1000 })).rejects.toBeInstanceOf(
      FenceStaleError,
    );
  });

  it('L6: nextFence increases monotonically per session', async () => {
    const ref = await newSession(store, []);
    const fences = [];
    for (let i = 0; i < 5; i++) fences.push(await store.nextFence(sessionKey(ref)));
    expect(fences).toEqual([1, 2, 3, 4, 5]);
  });

  it('C4: beginAttempt on a rotated parent fails with SessionEndedError naming the child', async () => {
    const ref = await newSession(store);
    const a = await begin(store, ref);
    await store.commitRotation(ref, a.attempt, [msg(1)]);
    const err = await begin(store, ref).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SessionEndedError);
    expect((err as SessionEndedError).liveSessionId).toBe(a.attempt.pendingChildId);
  });

  it('C3: a pre-fencing record (no fence, fenceCounter or version) compacts once; a second commit is refused', async () => {
    const ref = { tenantId: `t-${randomUUID()}`, sessionId: `legacy-${randomUUID()}` };
    const doc = DynamoDBDocumentClient.from(client);
    await doc.send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          pk: sessionPk(ref),
          sk: 'META',
          tenantId: ref.tenantId,
          sessionId: ref.sessionId,
          createdAt: new Date().toISOString(),
          generation: 0,
          messageCount: 0,
          lastSeq: 0,
        },
      }),
    );
    await store.appendMessages(ref, msgs(1, 4));
    const first = await begin(store, ref);
    expect(first.attempt.fence).toBe(1);
    expect(first.messages).toEqual(msgs(1, 4));
    const out = await store.commitRotation(ref, first.attempt, [msg(4)]);
    expect(out.child.parentSessionId).toBe(ref.sessionId);

    // A second attempt record (as a stale caller would hold) cannot commit again.
    const second = { ...first.attempt, attemptId: randomUUID(), pendingChildId: randomUUID(), fence: 2 };
    await expect(store.commitRotation(ref, second, [msg(4)])).rejects.toBeInstanceOf(RotationLostError);
    expect(await store.children(ref)).toHaveLength(1);
    expect(await rawItems(client, { tenantId: ref.tenantId, sessionId: second.pendingChildId })).toEqual([]);
  });

  it('C3/L6: a pre-fencing record with a generation but no fence counter gets fences above that generation', async () => {
    const ref = { tenantId: `t-${randomUUID()}`, sessionId: `legacy-${randomUUID()}` };
    const doc = DynamoDBDocumentClient.from(client);
    const base = { pk: sessionPk(ref), sk: 'META', tenantId: ref.tenantId, sessionId: ref.sessionId, createdAt: new Date().toISOString() };
    await doc.send(new PutCommand({ TableName: tableName(), Item: { ...base, generation: 3, messageCount: 0, lastSeq: 0 } }));
    // In-place generations are numbered by fence: a fence at or below 3 could reuse a live generation number.
    expect(await store.nextFence(sessionKey(ref))).toBe(4);
    expect(await store.nextFence(sessionKey(ref))).toBe(5);
    const concurrent = await Promise.all(Array.from({ length: 8 }, () => store.nextFence(sessionKey(ref))));
    expect(new Set(concurrent).size).toBe(8);
    expect(Math.min(...concurrent)).toBeGreaterThan(5);
  });
});
