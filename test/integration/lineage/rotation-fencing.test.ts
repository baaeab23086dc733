// Rotation under contention and fencing, on DynamoDB Local (SPEC I1, I2, C10, L6, C3, C4).
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  AttemptInFlightError,
  FenceStaleError,
  LineageError,
  RotationLostError,
  SessionEndedError,
  type RotationCommitted,
} from '../../../lib/lineage/index.js';
import {
  append,
  begin,
  commitInput,
  dynamoClient,
  legacyRef,
  makeStore,
  msg,
  msgs,
  newSession,
  putRawMeta,
  rawItems,
  rawMeta,
  rawSet,
} from './support.js';

const client = dynamoClient();
const store = makeStore(client);
afterAll(() => client.destroy());

describe('rotation commit', () => {
  it('C10: one transaction ends the parent and creates the child with its items; the child names parent and root', async () => {
    const ref = await newSession(store, msgs(1, 8));
    const begun = await begin(store, ref);
    expect(begun.attempt.watermark).toBe(8);
    expect(await store.readSnapshot(ref, begun)).toEqual(msgs(1, 8));

    const summary = [{ role: 'assistant', content: 'summary' }, msg(8)];
    const out = await store.commitRotation(ref, begun, commitInput(summary));

    expect(out.child.sessionId).toBe(begun.attempt.pendingChildId);
    expect(out.child.parentSessionId).toBe(ref.sessionId);
    expect(out.child.rootSessionId).toBe(ref.sessionId);
    expect(out.child.format).toBe('chat');
    expect(out.parent.endReason).toBe('compression');
    expect(out.parent.childSessionId).toBe(out.child.sessionId);
    const childRef = { tenantId: ref.tenantId, sessionId: out.child.sessionId };
    expect(await store.readAll(childRef)).toEqual(summary);
    const parent = await store.getSession(ref);
    expect(parent?.endedAt).toBeDefined();
    expect(parent?.attempt).toBeUndefined();
    expect(parent?.lastActivity?.label).toBe('compaction completed');
    const raw = await rawMeta(client, ref);
    expect(raw?.attemptShard).toBeUndefined();
    expect(raw?.tipSessionId).toBe(childRef.sessionId);
    expect((await store.lineage(childRef)).map((s) => s.sessionId)).toEqual([ref.sessionId, childRef.sessionId]);
    expect((await store.children(ref)).map((s) => s.sessionId)).toEqual([childRef.sessionId]);
    expect((await store.getSession(childRef))?.tokenEstimate).toBe(10);
  });

  it('I1/I2/C10: 50 concurrent begin+commit races for one parent yield exactly one child; losers get typed errors and leave nothing', async () => {
    const ref = await newSession(store, msgs(1, 10));
    const pendingIds: string[] = [];
    // Every begin records an already-expired lease (paused holders), so each may replace the last:
    // only the fence can keep them apart.
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, async (_, i) => {
        const begun = await begin(store, ref, `holder-${i}`, -1);
        pendingIds.push(begun.attempt.pendingChildId);
        return store.commitRotation(ref, begun, commitInput([{ role: 'assistant', content: `summary ${i}` }]));
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
    expect((await store.children(ref)).map((c) => c.sessionId)).toEqual([winner.child.sessionId]);
    const leftovers = await Promise.all(
      pendingIds.filter((id) => id !== winner.child.sessionId).map((sessionId) => rawItems(client, { tenantId: ref.tenantId, sessionId })),
    );
    expect(leftovers.flat()).toEqual([]);
    expect((await store.findAllForks()).filter((f) => f.parent.tenantId === ref.tenantId)).toEqual([]);
  });

  it('L6: a live attempt is never replaced by a lease that ends no later: a second begin gets AttemptInFlightError naming the holder', async () => {
    const ref = await newSession(store);
    await begin(store, ref, 'A');
    // Leases do not overlap: a begin whose lease ends before A's was granted before A's (begin-takeover.test.ts).
    const err = await begin(store, ref, 'B', 20_000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AttemptInFlightError);
    expect((err as AttemptInFlightError).holder).toBe('A');
  });

  it('L6: A paused past its lease, B begins with a higher fence, A commits -> FenceStaleError; B commits', async () => {
    const ref = await newSession(store);
    const a = await begin(store, ref, 'A', -1);
    const b = await begin(store, ref, 'B');
    expect(b.attempt.fence).toBeGreaterThan(a.attempt.fence);
    await expect(store.commitRotation(ref, a, commitInput([msg(1)]))).rejects.toBeInstanceOf(FenceStaleError);
    expect(await rawItems(client, { tenantId: ref.tenantId, sessionId: a.attempt.pendingChildId })).toEqual([]);
    expect((await store.getSession(ref))?.attempt?.attemptId).toBe(b.attempt.attemptId);
    const out = await store.commitRotation(ref, b, commitInput([msg(1)]));
    expect(out.child.sessionId).toBe(b.attempt.pendingChildId);
    expect(await store.children(ref)).toHaveLength(1);
  });

  it('L6: fences increase per session, one per begin', async () => {
    const ref = await newSession(store, []);
    const fences: number[] = [];
    for (let i = 0; i < 5; i++) {
      const b = await begin(store, ref, `h${i}`);
      fences.push(b.attempt.fence);
      await store.abandonAttempt(ref, b.attempt);
    }
    expect(fences).toEqual([1, 2, 3, 4, 5]);
  });

  it('C4: beginAttempt on a rotated parent fails with SessionEndedError naming the live tip (two rotations down)', async () => {
    const ref = await newSession(store);
    const a = await begin(store, ref);
    const first = await store.commitRotation(ref, a, commitInput([msg(1)]));
    const childRef = { tenantId: ref.tenantId, sessionId: first.child.sessionId };
    const b = await begin(store, childRef);
    const second = await store.commitRotation(childRef, b, commitInput([msg(2)]));
    const err = await begin(store, ref).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SessionEndedError);
    expect((err as SessionEndedError).liveSessionId).toBe(second.child.sessionId);
    expect(await store.liveTip(ref)).toBe(second.child.sessionId);
  });

  it('C3: a pre-fencing record (no fence, fenceCounter or version) compacts once; a second commit is refused', async () => {
    const ref = legacyRef();
    await putRawMeta(client, ref, { generation: 0, messageCount: 0, lastSeq: 0 });
    await append(store, ref, msgs(1, 4));
    const first = await begin(store, ref);
    expect(first.attempt.fence).toBe(1);
    expect(await store.readSnapshot(ref, first)).toEqual(msgs(1, 4));
    const out = await store.commitRotation(ref, first, commitInput([msg(4)]));
    expect(out.child.parentSessionId).toBe(ref.sessionId);
    // A stale caller's attempt cannot commit again.
    const second = { ...first, attempt: { ...first.attempt, attemptId: randomUUID(), pendingChildId: randomUUID(), fence: 2 } };
    await expect(store.commitRotation(ref, second, commitInput([msg(4)]))).rejects.toBeInstanceOf(RotationLostError);
    expect(await store.children(ref)).toHaveLength(1);
    expect(await rawItems(client, { tenantId: ref.tenantId, sessionId: second.attempt.pendingChildId })).toEqual([]);
  });

  it('C3/L6: a pre-fencing record with a generation but no fence counter gets fences above that generation', async () => {
    const ref = legacyRef();
    await putRawMeta(client, ref, { generation: 3, messageCount: 0, lastSeq: 0 });
    // In-place generations are numbered by fence: a fence at or below 3 could reuse a live generation number.
    const a = await begin(store, ref);
    expect(a.attempt.fence).toBe(4);
    await store.abandonAttempt(ref, a.attempt);
    expect((await begin(store, ref)).attempt.fence).toBe(5);
  });

  it('C3: a record older still (no generation, counters or version at all) begins with fence 1', async () => {
    const ref = legacyRef();
    await putRawMeta(client, ref, {});
    const a = await begin(store, ref);
    expect(a.attempt.fence).toBe(1);
    expect(a.attempt.watermark).toBe(0);
  });
});

// Each commit condition SPEC C10 names, alone: a raw write that changes only that attribute
// (no version bump, so only that condition can catch it) must make the commit fail.
describe('C10: each commit condition is necessary', () => {
  it('C10: not ended: a parent ended behind the attempt is refused and gets no child', async () => {
    const ref = await newSession(store);
    const b = await begin(store, ref);
    await rawSet(client, ref, 'endedAt', new Date().toISOString());
    await expect(store.commitRotation(ref, b, commitInput([msg(1)]))).rejects.toBeInstanceOf(SessionEndedError);
    expect(await store.children(ref)).toEqual([]);
  });

  it('C10: no child: a parent that already names a child is refused and gets no second child', async () => {
    const ref = await newSession(store);
    const b = await begin(store, ref);
    await rawSet(client, ref, 'childSessionId', 'someone-else');
    await expect(store.commitRotation(ref, b, commitInput([msg(1)]))).rejects.toBeInstanceOf(RotationLostError);
    expect(await store.children(ref)).toEqual([]);
  });

  it('L6/C10: fence current: a fence moved behind the attempt is refused', async () => {
    const ref = await newSession(store);
    const b = await begin(store, ref);
    await rawSet(client, ref, 'fence', b.attempt.fence + 1);
    await expect(store.commitRotation(ref, b, commitInput([msg(1)]))).rejects.toBeInstanceOf(FenceStaleError);
    expect(await store.children(ref)).toEqual([]);
  });

  it('L6/C11: fence current also guards the in-place flip', async () => {
    const ref = await newSession(store);
    const b = await begin(store, ref);
    await rawSet(client, ref, 'fence', b.attempt.fence + 1);
    await expect(store.commitInPlace(ref, b, commitInput([msg(1)]))).rejects.toBeInstanceOf(FenceStaleError);
    expect(await store.readAll(ref)).toEqual(msgs(1, 6));
  });
});
