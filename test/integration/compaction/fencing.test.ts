// Paused holders and lease liveness inside real attempts (SPEC L6, L7, I1, I4, C8).
import { describe, expect, it } from 'vitest';
import { compactSession } from '../../../lib/compaction/index.js';
import type { AttemptRefresher } from '../../../lib/compaction/types.js';
import type { LineageStore } from '../../../lib/lineage/types.js';
import { SUMMARY_PREFIX, type Item } from '../../../lib/items/types.js';
import { sessionKey } from '../../../lib/session-ref.js';
import {
  appendTo,
  compressedItems,
  contendersForSuite,
  depsOn,
  deferred,
  seedSession,
  sleep,
  SUMMARY,
  testEngine,
  waitFor,
  withOverrides,
  type Contender,
} from '../../support/compaction-fixtures.js';

const [a, b] = contendersForSuite(2) as [Contender, Contender];

/** A paused process: its refresher never gets to run, so its lease silently expires. */
const pausedRefresher = (): AttemptRefresher => ({
  start: () => undefined,
  stop: async () => undefined,
  signal: new AbortController().signal,
});

describe('fencing a paused holder', () => {
  it('L6 I1: A pauses past its TTL, B acquires, begins and commits; A is refused at commit, exactly one child', async () => {
    const ref = await seedSession(a.store);
    const aStarted = deferred();
    const aResume = deferred();
    const aEngine = testEngine(async () => {
      aStarted.resolve();
      await aResume.promise;
      return {
        items: [
          { role: 'user', content: `${SUMMARY_PREFIX} A's summary` },
          { role: 'user', content: 'tail' },
        ],
      };
    });
    const aRun = compactSession(depsOn(a, { engine: aEngine, leaseTtlMs: 500, createRefresher: pausedRefresher }), {
      ref,
      mode: 'rotate',
      origin: 'turn',
      holder: 'A',
    });
    await aStarted.promise;
    await waitFor(async () => (await b.lease.holderOf(sessionKey(ref))) === null, "A's lease to expire");

    const bOut = await compactSession(depsOn(b, {}), { ref, mode: 'rotate', origin: 'turn', holder: 'B' });
    expect(bOut.outcome).toBe('compressed');

    aResume.resolve();
    const aOut = await aRun;
    expect(aOut.outcome).toBe('skipped');
    expect(aOut).toMatchObject({ reason: expect.stringMatching(/^(lease_lost|adopted)$/) });
    if (aOut.outcome === 'skipped' && aOut.reason === 'adopted') expect(aOut.sessionId).toBe(bOut.sessionId);
    const children = await a.store.children(ref);
    expect(children.map((s) => s.sessionId)).toEqual([bOut.sessionId]);
    expect((await a.store.readAll({ tenantId: ref.tenantId, sessionId: bOut.sessionId })).map((m) => m.content)).toEqual(
      SUMMARY.map((m) => m.content),
    );
    expect(await a.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('L6 I1: B has begun but not committed when A tries: A gets lease_lost, B then commits the only child', async () => {
    const ref = await seedSession(a.store);
    const aStarted = deferred();
    const aResume = deferred();
    const aRun = compactSession(
      depsOn(a, {
        leaseTtlMs: 500,
        createRefresher: pausedRefresher,
        engine: testEngine(async () => {
          aStarted.resolve();
          await aResume.promise;
          return { items: structuredClone(SUMMARY) };
        }),
      }),
      { ref, mode: 'rotate', origin: 'turn', holder: 'A' },
    );
    await aStarted.promise;
    await waitFor(async () => (await b.lease.holderOf(sessionKey(ref))) === null, "A's lease to expire");
    const bStarted = deferred();
    const bResume = deferred();
    const bRun = compactSession(
      depsOn(b, {
        engine: testEngine(async () => {
          bStarted.resolve();
          await bResume.promise;
          return { items: structuredClone(SUMMARY) };
        }),
      }),
      { ref, mode: 'rotate', origin: 'turn', holder: 'B' },
    );
    await bStarted.promise; // B's beginAttempt recorded a newer fence
    aResume.resolve();
    expect(await aRun).toMatchObject({ outcome: 'skipped', reason: 'lease_lost', sessionId: ref.sessionId });
    expect(await a.store.children(ref)).toEqual([]);
    bResume.resolve();
    const bOut = await bRun;
    expect(bOut.outcome).toBe('compressed');
    expect((await a.store.children(ref)).map((s) => s.sessionId)).toEqual([bOut.sessionId]);
    expect(await a.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it("L7/S1: a live owner's refresher keeps its lease (and its attempt record) past the initial TTL; a probe cannot take it", async () => {
    const ref = await seedSession(a.store);
    const started = deferred();
    const resume = deferred();
    const run = compactSession(
      depsOn(a, {
        leaseTtlMs: 1_500,
        refreshIntervalMs: 150,
        engine: testEngine(async () => {
          started.resolve();
          await resume.promise;
          return { items: structuredClone(SUMMARY) };
        }),
      }),
      { ref, mode: 'rotate', origin: 'turn', holder: 'owner' },
    );
    await started.promise;
    const initialExpiry = (await a.store.getSession(ref))!.attempt!.leaseExpiresAt;
    await sleep(2_500); // well past the initial TTL
    const probe = await b.lease.tryAcquire(sessionKey(ref), { ttlMs: 1_000, holder: 'probe' });
    expect(probe.acquired).toBe(false);
    // S1: the attempt record follows the refreshed lease, so the sweep never sees it as expired.
    const extended = (await a.store.getSession(ref))!.attempt!;
    expect(extended.leaseExpiresAt).toBeGreaterThan(initialExpiry);
    expect((await a.store.listSweepWork(Date.now(), 1000)).attempts).not.toContainEqual(expect.objectContaining({ ref }));
    resume.resolve();
    expect((await run).outcome).toBe('compressed');
    expect(await a.store.children(ref)).toHaveLength(1);
    expect(await a.lease.holderOf(sessionKey(ref))).toBeNull();
  });
});

describe('fence issued after the lease expired (L6)', () => {
  it('L6 I1: A stalls in its first write past its TTL while B takes the lease: A fences but its ownership check fails, its engine never runs, B commits', async () => {
    const ref = await seedSession(a.store);
    const aInBegin = deferred();
    const aGo = deferred();
    // A won Redis, then its beginAttempt (the fence write) stalls: a paused process.
    const slowStore = withOverrides<LineageStore>(a.store, {
      beginAttempt: async (...args: Parameters<LineageStore['beginAttempt']>) => {
        aInBegin.resolve();
        await aGo.promise;
        return a.store.beginAttempt(...args);
      },
    });
    const aEngine = testEngine();
    const aRun = compactSession(depsOn(a, { store: slowStore, engine: aEngine, leaseTtlMs: 400 }), {
      ref,
      mode: 'rotate',
      origin: 'turn',
      holder: 'A',
    });
    await aInBegin.promise;
    await waitFor(async () => (await b.lease.holderOf(sessionKey(ref))) === null, "A's lease to expire");
    // B takes the lease, then stalls before its own first write.
    const bInBegin = deferred();
    const bGo = deferred();
    const bStore = withOverrides<LineageStore>(b.store, {
      beginAttempt: async (...args: Parameters<LineageStore['beginAttempt']>) => {
        bInBegin.resolve();
        await bGo.promise;
        return b.store.beginAttempt(...args);
      },
    });
    const bRun = compactSession(depsOn(b, { store: bStore }), { ref, mode: 'rotate', origin: 'turn', holder: 'B' });
    await bInBegin.promise;
    // A resumes: its fence is now the newest, but it no longer owns the lease.
    aGo.resolve();
    expect(await aRun).toMatchObject({ outcome: 'skipped', reason: 'lease_lost', sessionId: ref.sessionId });
    expect(aEngine.calls).toHaveLength(0);
    expect((await a.store.getSession(ref))?.attempt).toBeUndefined();
    bGo.resolve();
    const bOut = await bRun;
    expect(bOut.outcome).toBe('compressed');
    expect((await a.store.children(ref)).map((s) => s.sessionId)).toEqual([bOut.sessionId]);
    expect(await a.lease.holderOf(sessionKey(ref))).toBeNull();
  });
});

describe('concurrent tail', () => {
  it.each(['rotate', 'in_place'] as const)('I4: messages appended during the engine call end up in the result (%s)', async (mode) => {
    const ref = await seedSession(a.store);
    const started = deferred();
    const resume = deferred();
    const run = compactSession(
      depsOn(a, {
        engine: testEngine(async (input) => {
          expect(input).toHaveLength(20); // the snapshot stops at the watermark
          started.resolve();
          await resume.promise;
          return { items: structuredClone(SUMMARY) };
        }),
      }),
      { ref, mode, origin: 'turn', holder: 'tail' },
    );
    await started.promise;
    const appended: Item[] = [
      { role: 'assistant', content: 'late answer' },
      { role: 'user', content: 'late question' },
    ];
    // Appends are not blocked by the lease (another client, another connection).
    await appendTo(b.store, ref, appended);
    resume.resolve();
    const out = await run;
    expect(out.outcome).toBe('compressed');
    expect(
      compressedItems(out)
        .slice(-2)
        .map((m) => m.content),
    ).toEqual(['late answer', 'late question']);
    const live = { tenantId: ref.tenantId, sessionId: out.sessionId };
    expect((await a.store.readAll(live)).map((m) => m.content)).toEqual(compressedItems(out).map((m) => m.content));
    expect(compressedItems(out).map((m) => m.content)).toEqual([...SUMMARY.map((m) => m.content), 'late answer', 'late question']);
  });
});

describe('human anchor in a committed compaction', () => {
  it('C8: the engine dropped every user turn: the last real user turn is restored and committed', async () => {
    const input: Item[] = [
      { role: 'user', content: 'first request' },
      { role: 'assistant', content: 'first answer '.repeat(30) },
      { role: 'user', content: 'please continue from here' },
      { role: 'assistant', content: 'working '.repeat(30) },
    ];
    const ref = await seedSession(a.store, input);
    const engine = testEngine(() => ({ items: [{ role: 'assistant', content: `${SUMMARY_PREFIX} earlier work was summarized` }] }));
    const out = await compactSession(depsOn(a, { engine }), { ref, mode: 'rotate', origin: 'turn', holder: 'anchor' });
    expect(out.outcome).toBe('compressed');
    const users = compressedItems(out).filter((m) => m.role === 'user');
    expect(users.map((m) => m.content)).toEqual(['please continue from here']);
    const stored = await a.store.readAll({ tenantId: ref.tenantId, sessionId: out.sessionId });
    expect(stored.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['please continue from here']);
  });

  it('C8: synthetic scaffolding is not an anchor; restoring merges rather than stacking user turns', async () => {
    const input: Item[] = [
      { role: 'user', content: 'the actual human objective' },
      { role: 'assistant', content: 'working '.repeat(40) },
    ];
    const ref = await seedSession(a.store, input);
    const engine = testEngine(() => ({
      items: [
        { role: 'assistant', content: `${SUMMARY_PREFIX} summary` },
        { role: 'user', content: '[Your active task list was preserved across context compression]', synthetic: true },
      ],
    }));
    const out = await compactSession(depsOn(a, { engine }), { ref, mode: 'in_place', origin: 'turn', holder: 'anchor' });
    expect(out.outcome).toBe('compressed');
    const roles = compressedItems(out).map((m) => m.role);
    expect(roles.some((r, i) => r === 'user' && roles[i + 1] === 'user')).toBe(false);
    const human = compressedItems(out).find((m) => (m.content as string).startsWith('the actual human objective'));
    expect(human?.role).toBe('user');
    expect(human?.synthetic).toBeUndefined();
  });
});
