// Outcomes of one attempt against real Redis + DynamoDB Local: C1, C2, C4, C7, C10, C11, C13.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { fromDomainError } from '../../../lib/api/errors.js';
import { compactSession } from '../../../lib/compaction/index.js';
import { SessionNotFoundError } from '../../../lib/lineage/errors.js';
import type { CompactionDeps } from '../../../lib/compaction/types.js';
import { SessionLease } from '../../../lib/lease/index.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { freePort, startRedis } from '../../../infra/local/processes.js';
import { putRawMeta } from '../lineage/support.js';
import {
  appendTo,
  contenderForSuite,
  depsOn,
  lineageFields,
  seedSession,
  snapshot,
  SUMMARY,
  testEngine,
} from '../../support/compaction-fixtures.js';

const c = contenderForSuite();

const deps = (engine = testEngine(), extra: Partial<CompactionDeps> = {}): CompactionDeps => depsOn(c, { engine, ...extra });

describe('compactSession outcomes', () => {
  it('C10: rotation ends the parent, creates one child and persists its messages before returning', async () => {
    const ref = await seedSession(c.store);
    const out = await compactSession(deps(), { ref, mode: 'rotate', origin: 'turn', holder: 'fn-a' });
    expect(out.outcome).toBe('compressed');
    if (out.outcome !== 'compressed') return;
    expect(out.mode).toBe('rotate');
    expect(out.previousSessionId).toBe(ref.sessionId);
    expect(out.sessionId).not.toBe(ref.sessionId);
    expect(out.items.map((m) => m.content)).toEqual(SUMMARY.map((m) => m.content));
    const parent = await c.store.getSession(ref);
    expect(parent?.endReason).toBe('compression');
    expect(parent?.childSessionId).toBe(out.sessionId);
    const children = await c.store.children(ref);
    expect(children.map((s) => s.sessionId)).toEqual([out.sessionId]);
    const childItems = await c.store.readAll({ tenantId: ref.tenantId, sessionId: out.sessionId });
    expect(childItems.map((m) => m.content)).toEqual(out.items.map((m) => m.content));
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('C11: in-place keeps the session id, makes the compacted list the active generation', async () => {
    const ref = await seedSession(c.store);
    const before = await c.store.getSession(ref);
    const out = await compactSession(deps(), { ref, mode: 'in_place', origin: 'manual', holder: 'fn-a' });
    expect(out).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: ref.sessionId, previousSessionId: ref.sessionId });
    if (out.outcome !== 'compressed') return;
    const after = await c.store.getSession(ref);
    expect(after?.generation).toBeGreaterThan(before!.generation);
    expect(after?.endReason).toBeUndefined();
    expect((await c.store.readAll(ref)).map((m) => m.content)).toEqual(out.items.map((m) => m.content));
    // P3: archiving the replaced generation is handed back, not done on the commit path.
    expect(out.deferred).toMatchObject({ kind: 'archive', generation: before!.generation });
    expect(await c.store.children(ref)).toEqual([]);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('C1: the loser of the lease race returns its input verbatim when asked (in-process), never calls the engine, changes nothing', async () => {
    const input = [
      { role: 'user', content: 'm1' },
      { role: 'user', content: 'm2' },
    ];
    const ref = await seedSession(c.store, input);
    const held = await c.lease.tryAcquire(sessionKey(ref), { ttlMs: 10_000, holder: 'external_holder' });
    expect(held.acquired).toBe(true);
    if (!held.acquired) return;
    try {
      const before = await snapshot(c.store, ref);
      const engine = testEngine();
      const out = await compactSession(deps(engine), { ref, mode: 'rotate', origin: 'turn', holder: 'fn-b', returnInput: true });
      expect(out).toMatchObject({ outcome: 'skipped', reason: 'locked', sessionId: ref.sessionId, holder: held.token });
      expect(out.items).toEqual(input);
      // Without returnInput (HTTP and queue callers) the loser reads nothing: no items in the answer (C1, P2).
      const lean = await compactSession(deps(engine), { ref, mode: 'rotate', origin: 'turn', holder: 'fn-c' });
      expect(lean).toMatchObject({ outcome: 'skipped', reason: 'locked', holder: held.token });
      expect(lean.items).toBeUndefined();
      expect(engine.calls).toHaveLength(0);
      expect(await snapshot(c.store, ref)).toEqual(before);
      // The loser never touched the winner's lease.
      expect(await c.lease.holderOf(sessionKey(ref))).toBe(held.token);
    } finally {
      await c.lease.release(held);
    }
  });

  it('C2: lease backend down (servers stopped) → skipped/lease_unavailable, engine not called, store untouched', async () => {
    const nodes = await Promise.all([startRedis(), startRedis(), startRedis()]);
    const clients = createRedisClients(
      nodes.map((n) => n.url),
      { connectTimeoutMs: 200 },
    );
    try {
      await waitForRedis(clients);
      await Promise.all(nodes.map((n) => n.stop()));
      const downLease = new SessionLease({ clients });
      const ref = await seedSession(c.store);
      const before = await snapshot(c.store, ref);
      const engine = testEngine();
      const out = await compactSession({ ...deps(engine), lease: downLease }, { ref, mode: 'rotate', origin: 'turn', holder: 'fn-a' });
      expect(out).toMatchObject({ outcome: 'skipped', reason: 'lease_unavailable', sessionId: ref.sessionId });
      expect(out.items).toBeUndefined();
      expect(engine.calls).toHaveLength(0);
      expect(await snapshot(c.store, ref)).toEqual(before);
    } finally {
      for (const r of clients) r.disconnect();
      await Promise.all(nodes.map((n) => n.stop()));
    }
  });

  it('C2: lease backend never reachable (closed ports) → skipped/lease_unavailable, engine not called', async () => {
    const ports = await Promise.all([freePort(), freePort(), freePort()]);
    const clients = createRedisClients(
      ports.map((p) => `redis://127.0.0.1:${p}`),
      { connectTimeoutMs: 200 },
    );
    try {
      const ref = await seedSession(c.store);
      const before = await snapshot(c.store, ref);
      const engine = testEngine();
      const out = await compactSession(
        { ...deps(engine), lease: new SessionLease({ clients }) },
        { ref, mode: 'in_place', origin: 'turn', holder: 'fn-a' },
      );
      expect(out).toMatchObject({ outcome: 'skipped', reason: 'lease_unavailable' });
      expect(engine.calls).toHaveLength(0);
      expect(await snapshot(c.store, ref)).toEqual(before);
    } finally {
      for (const r of clients) r.disconnect();
    }
  });

  it('L4: the acquire majority, end to end: a foreign key on one of three nodes still compacts; on two it is locked', async () => {
    const key = `lease:session:${sessionKey({ tenantId: 'x', sessionId: 'y' })}`.replace('x/y', '');
    const one = await seedSession(c.store);
    await c.redis[0]!.set(`${key}${sessionKey(one)}`, 'ghost#1', 'PX', 10_000);
    const won = await compactSession(deps(), { ref: one, mode: 'rotate', origin: 'turn', holder: 'majority' });
    expect(won.outcome).toBe('compressed');
    // The ghost on node 0 is untouched (never ours), and our token is gone from the others after release.
    expect(await c.redis[0]!.get(`${key}${sessionKey(one)}`)).toBe('ghost#1');
    expect(await c.redis[1]!.get(`${key}${sessionKey(one)}`)).toBeNull();

    const two = await seedSession(c.store);
    await Promise.all([c.redis[0]!, c.redis[1]!].map((r) => r.set(`${key}${sessionKey(two)}`, 'ghost#2', 'PX', 10_000)));
    const engine = testEngine();
    const lost = await compactSession(deps(engine), { ref: two, mode: 'rotate', origin: 'turn', holder: 'minority' });
    expect(lost).toMatchObject({ outcome: 'skipped', reason: 'locked', holder: 'ghost#2' });
    expect(engine.calls).toHaveLength(0);
    // Our SET landed on node 2 only and was undone there.
    expect(await c.redis[2]!.get(`${key}${sessionKey(two)}`)).toBeNull();
    expect(await c.store.children(two)).toEqual([]);
  });

  it('C4: an attempt on an already rotated parent adopts the live child and never compacts again', async () => {
    const ref = await seedSession(c.store);
    const first = await compactSession(deps(), { ref, mode: 'rotate', origin: 'turn', holder: 'fn-a' });
    expect(first.outcome).toBe('compressed');
    const engine = testEngine();
    const second = await compactSession(deps(engine), { ref, mode: 'rotate', origin: 'turn', holder: 'fn-b' });
    expect(second).toMatchObject({ outcome: 'skipped', reason: 'adopted', sessionId: first.sessionId });
    expect(engine.calls).toHaveLength(0);
    expect((await c.store.children(ref)).map((s) => s.sessionId)).toEqual([first.sessionId]);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
    // In-place on the ended parent is refused the same way.
    const third = await compactSession(deps(engine), { ref, mode: 'in_place', origin: 'turn', holder: 'fn-c' });
    expect(third).toMatchObject({ outcome: 'skipped', reason: 'adopted', sessionId: first.sessionId });
    expect(engine.calls).toHaveLength(0);
  });

  it("C4 C13 F1 K3: when the chain's live tip is deleted the whole chain goes (issue 28): adoption and review answer not found (404), never the ended parent", async () => {
    const ref = await seedSession(c.store);
    const first = await compactSession(deps(), { ref, mode: 'rotate', origin: 'turn', holder: 'fn-a' });
    expect(first.outcome).toBe('compressed');
    await c.store.deleteSession({ tenantId: ref.tenantId, sessionId: first.sessionId });
    const engine = testEngine();
    for (const mode of ['rotate', 'in_place'] as const) {
      const err = await compactSession(deps(engine), { ref, mode, origin: 'turn', holder: `fn-${mode}` }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SessionNotFoundError);
      expect(fromDomainError(err)).toMatchObject({ status: 404, code: 'not_found' });
      expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
    }
    expect(engine.calls).toHaveLength(0);
    const review = await compactSession(deps(engine), { ref, mode: 'rotate', origin: 'review', holder: 'review-fork' }).catch(
      (e: unknown) => e,
    );
    expect(fromDomainError(review)?.code).toBe('not_found');
  });

  describe.each(['rotate', 'in_place'] as const)('C7 no-op results never write (%s)', (mode) => {
    it.each([
      ['empty_result', () => []],
      ['unchanged', (ms: readonly Record<string, unknown>[]) => structuredClone([...ms])],
      ['grown', (ms: readonly Record<string, unknown>[]) => [...structuredClone([...ms]), { role: 'assistant', content: 'extra' }]],
    ] as const)('C7: %s → noop, input returned, session untouched, no child, lease free', async (reason, make) => {
      const ref = await seedSession(c.store);
      const before = await snapshot(c.store, ref);
      const engine = testEngine((ms) => ({ items: make(ms) as never }));
      const out = await compactSession(deps(engine), { ref, mode, origin: 'turn', holder: 'fn-a', returnInput: true });
      expect(out).toMatchObject({ outcome: 'noop', reason, sessionId: ref.sessionId });
      expect(out.items).toEqual(before.items);
      expect(engine.calls).toHaveLength(1);
      const after = await snapshot(c.store, ref);
      expect(lineageFields(after.session)).toEqual(lineageFields(before.session));
      expect(after.session?.attempt).toBeUndefined();
      expect(after.children).toEqual([]);
      expect(after.items).toEqual(before.items);
      expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
    });
  });

  it('C7: an empty session is nothing to compact: engine not called, nothing written', async () => {
    const ref = await seedSession(c.store, []);
    const engine = testEngine();
    const out = await compactSession(deps(engine), { ref, mode: 'rotate', origin: 'turn', holder: 'fn-a', returnInput: true });
    expect(out).toMatchObject({ outcome: 'noop', reason: 'nothing_to_compact', items: [] });
    expect(engine.calls).toHaveLength(0);
    expect(await c.store.children(ref)).toEqual([]);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('C13: a review-origin request is disabled by rule: no lease, no engine, nothing written', async () => {
    const ref = await seedSession(c.store);
    const before = await snapshot(c.store, ref);
    const engine = testEngine();
    const seen: string[] = [];
    const spyLease = {
      ...c.lease,
      tryAcquire: () => Promise.reject(new Error('must not be called')),
    } as unknown as CompactionDeps['lease'];
    const out = await compactSession(
      { ...deps(engine), lease: spyLease, onWarning: (w) => seen.push(w) },
      { ref, mode: 'rotate', origin: 'review', holder: 'review-fork', returnInput: true },
    );
    expect(out).toMatchObject({ outcome: 'disabled', reason: 'review_origin', sessionId: ref.sessionId });
    expect(out.items).toEqual(before.items);
    expect(engine.calls).toHaveLength(0);
    expect(seen).toEqual([]);
    expect(await snapshot(c.store, ref)).toEqual(before);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('C13/F1: a review request on a rotated session is disabled and names the live tip', async () => {
    const ref = await seedSession(c.store);
    const first = await compactSession(deps(), { ref, mode: 'rotate', origin: 'turn', holder: 'fn-a' });
    const out = await compactSession(deps(), { ref, mode: 'rotate', origin: 'review', holder: 'review-fork' });
    expect(out).toMatchObject({ outcome: 'disabled', reason: 'review_origin', sessionId: first.sessionId });
  });

  it('C6: the engine receives only its declared options, once, with keepLast/targetTokens from the request', async () => {
    const ref = await seedSession(c.store);
    const strict = testEngine(undefined, ['keepLast', 'targetTokens']);
    await compactSession(deps(strict), { ref, mode: 'rotate', origin: 'turn', holder: 'fn-a', keepLast: 3, targetTokens: 500, focus: 'x' });
    expect(strict.calls).toHaveLength(1);
    expect(strict.calls[0]!.options).toEqual({ keepLast: 3, targetTokens: 500 });
    expect(strict.calls[0]!.items).toHaveLength(20);
    expect(strict.calls[0]!.format).toBe('chat');
  });

  it.each(['rotate', 'in_place'] as const)(
    'C3: a real pre-fencing record (no fence, counter, version, format or token estimate) compacts once through compactSession (%s)',
    async (mode) => {
      const ref = { tenantId: `t-${randomUUID()}`, sessionId: `legacy-${randomUUID()}` };
      await putRawMeta(c.ddb, ref, { generation: 2, messageCount: 0, lastSeq: 0 });
      await appendTo(
        c.store,
        ref,
        Array.from({ length: 20 }, (_, i) => ({ role: 'user', content: `m${i}` })),
      );
      expect((await c.store.getSession(ref))?.fence).toBeUndefined();
      const out = await compactSession(deps(), { ref, mode, origin: 'turn', holder: 'fn-a' });
      expect(out.outcome).toBe('compressed');
      if (out.outcome !== 'compressed') return;
      expect(out.items.length).toBeLessThan(20);
      const after = await c.store.getSession(ref);
      expect(after?.fence).toBeGreaterThan(2);
      expect(await c.store.children(ref)).toHaveLength(mode === 'rotate' ? 1 : 0);
      // And again: progress, not a loop (the second in-place compaction sees the compacted list).
      const again = await compactSession(deps(), {
        ref: mode === 'rotate' ? { tenantId: ref.tenantId, sessionId: out.sessionId } : ref,
        mode,
        origin: 'turn',
        holder: 'fn-b',
      });
      expect(['compressed', 'noop']).toContain(again.outcome);
    },
  );
});
