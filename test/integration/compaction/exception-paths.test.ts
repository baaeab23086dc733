// Exception paths (SPEC C6, C12, I3, C2, L5): whatever throws inside an attempt, the lease is
// released, the refresher stops, nothing is committed. Real Redis + DynamoDB Local; fakes
// only for faults they cannot produce (a refresher that cannot start, a throwing getter...).
import { describe, expect, it } from 'vitest';
import { compactSession } from '../../../lib/compaction/index.js';
import type { AttemptRefresher, CompactionDeps, RefresherFactory } from '../../../lib/compaction/types.js';
import type { CompressionEngine } from '../../../lib/compressors/types.js';
import type { LineageStore } from '../../../lib/lineage/types.js';
import { sessionKey, type SessionRef } from '../../../lib/session-ref.js';
import {
  contenderForSuite,
  depsOn,
  expectNoFurtherRefreshes,
  leaseKeyOf,
  recordingRefreshers,
  seedSession,
  snapshot,
  SUMMARY,
  testEngine,
  waitFor,
  withOverrides,
} from '../../support/compaction-fixtures.js';

const c = contenderForSuite();

const req = (ref: SessionRef) => ({ ref, mode: 'rotate' as const, origin: 'turn' as const, holder: 'exc', returnInput: true });

function deps(engine: CompressionEngine, extra: Partial<CompactionDeps> = {}): CompactionDeps {
  return depsOn(c, { engine, leaseTtlMs: 3000, refreshIntervalMs: 100, heartbeatIntervalMs: 20, ...extra });
}

/** Nothing committed, the attempt cleared, no lease left. */
async function expectUntouched(ref: SessionRef): Promise<void> {
  const s = await snapshot(c.store, ref);
  expect(s.children).toEqual([]);
  expect(s.session?.endReason).toBeUndefined();
  expect(s.session?.attempt).toBeUndefined();
  expect(s.items).toHaveLength(20);
  expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
}

describe('exception paths release the lease and stop the refresher', () => {
  it('C6 I3: an engine error propagates after cleanup; the engine is called exactly once (no retry)', async () => {
    const ref = await seedSession(c.store);
    const r = recordingRefreshers();
    const engine = testEngine(() => {
      throw new TypeError('engine implementation bug');
    });
    await expect(compactSession(deps(engine, { createRefresher: r.factory }), req(ref))).rejects.toThrow('engine implementation bug');
    expect(engine.calls).toHaveLength(1);
    expect(r.made).toHaveLength(1);
    expect(r.made[0]!.stops).toBe(1);
    expect(await expectNoFurtherRefreshes(r.made[0]!)).toBe(true);
    await expectUntouched(ref);
  });

  it('C12 I3: onWarning that throws on an engine warning: error propagates, nothing committed, lease released', async () => {
    const ref = await seedSession(c.store);
    const r = recordingRefreshers();
    const engine = testEngine(() => ({ items: structuredClone(SUMMARY), warnings: ['summary failed; fell back to extractive'] }));
    const seen: string[] = [];
    const onWarning = (w: string) => {
      seen.push(w);
      throw new Error('warn boom');
    };
    await expect(compactSession(deps(engine, { createRefresher: r.factory, onWarning }), req(ref))).rejects.toThrow('warn boom');
    expect(seen).toEqual(['summary failed; fell back to extractive']);
    expect(await expectNoFurtherRefreshes(r.made[0]!)).toBe(true);
    await expectUntouched(ref);
  });

  it('C12 I3: onWarning that throws on the abort warning: error propagates, lease released', async () => {
    const ref = await seedSession(c.store);
    const r = recordingRefreshers();
    const engine = testEngine(() => ({ items: [{ role: 'user', content: 'tail' }], aborted: true, warnings: ['summary failed'] }));
    let n = 0;
    const onWarning = (w: string) => {
      if (++n === 2) throw new Error(`abort boom: ${w}`);
    };
    await expect(compactSession(deps(engine, { createRefresher: r.factory, onWarning }), req(ref))).rejects.toThrow(
      /abort boom: .*aborted/,
    );
    expect(await expectNoFurtherRefreshes(r.made[0]!)).toBe(true);
    await expectUntouched(ref);
  });

  it('C12: engine warnings and the abort warning are returned to the caller (noop aborted, nothing written)', async () => {
    const ref = await seedSession(c.store);
    const engine = testEngine(() => ({ items: [{ role: 'user', content: 'tail' }], aborted: true, warnings: ['summary failed'] }));
    const seen: string[] = [];
    const out = await compactSession(deps(engine, { onWarning: (w) => seen.push(w) }), req(ref));
    expect(out).toMatchObject({ outcome: 'noop', reason: 'aborted' });
    expect(out.warnings).toHaveLength(2);
    expect(out.warnings[0]).toBe('summary failed');
    expect(out.warnings[1]).toMatch(/aborted/);
    expect(seen).toEqual(out.warnings);
    await expectUntouched(ref);
  });

  it('C5 I3: a heartbeat touch that throws does not stop the attempt; the lease is released', async () => {
    const ref = await seedSession(c.store);
    let touches = 0;
    const store = withOverrides<LineageStore>(c.store, {
      touchActivity: async () => {
        touches++;
        throw new Error('touch boom');
      },
    });
    const engine = testEngine(async () => {
      await waitFor(() => touches >= 2, 'a couple of heartbeats');
      return { items: structuredClone(SUMMARY) };
    });
    const out = await compactSession(deps(engine, { store }), req(ref));
    expect(out.outcome).toBe('compressed');
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('I3: a refresher that cannot start: error propagates, it is still stopped, lease released, engine not called', async () => {
    const ref = await seedSession(c.store);
    const made: { stopped: boolean }[] = [];
    const factory: RefresherFactory = () => {
      const entry = { stopped: false };
      made.push(entry);
      return {
        start: () => {
          throw new Error('cannot start lock refresher');
        },
        stop: async () => {
          entry.stopped = true;
        },
        signal: new AbortController().signal,
      } satisfies AttemptRefresher;
    };
    const engine = testEngine();
    await expect(compactSession(deps(engine, { createRefresher: factory }), req(ref))).rejects.toThrow('cannot start lock refresher');
    expect(made).toEqual([{ stopped: true }]);
    expect(engine.calls).toHaveLength(0);
    await expectUntouched(ref);
  });

  it('I3: a refresher whose stop throws does not block the token-checked release; the original error wins', async () => {
    const ref = await seedSession(c.store);
    const inner = recordingRefreshers();
    let stopCalls = 0;
    const factory: RefresherFactory = (opts) => {
      const real = inner.factory(opts);
      return {
        start: () => real.start(),
        signal: real.signal,
        stop: async () => {
          stopCalls++;
          await real.stop();
          throw new Error('refresher stop boom');
        },
      };
    };
    const engine = testEngine(() => {
      throw new Error('engine boom');
    });
    await expect(compactSession(deps(engine, { createRefresher: factory }), req(ref))).rejects.toThrow('engine boom');
    expect(stopCalls).toBe(1);
    await expectUntouched(ref);
  });

  it('I3: a release that throws is logged, not thrown; a successful attempt still reports its commit', async () => {
    const ref = await seedSession(c.store);
    const errors: string[] = [];
    const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (m: string) => void errors.push(m) };
    const lease = withOverrides(c.lease, {
      release: async (l: Parameters<typeof c.lease.release>[0]) => {
        await c.lease.release(l); // the real, token-checked release still happens first
        throw new Error('release boom');
      },
    });
    const out = await compactSession(deps(testEngine(), { lease, logger }), req(ref));
    expect(out.outcome).toBe('compressed');
    expect(errors.some((m) => /release/.test(m))).toBe(true);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('I3: a failing abandonAttempt does not mask the engine error, and the lease is still released', async () => {
    const ref = await seedSession(c.store);
    const store = withOverrides<LineageStore>(c.store, {
      abandonAttempt: async () => {
        throw new Error('abandon boom');
      },
    });
    const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
    const engine = testEngine(() => {
      throw new Error('engine boom');
    });
    await expect(compactSession(deps(engine, { store, logger }), req(ref))).rejects.toThrow('engine boom');
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
    expect(await c.store.children(ref)).toEqual([]);
  });

  it('C6 I3: reading engine.acceptedOptions throws: propagates, engine never called, lease and refresher cleaned up', async () => {
    const ref = await seedSession(c.store);
    const r = recordingRefreshers();
    let calls = 0;
    const bomb: CompressionEngine = {
      name: 'signature-bomb',
      get acceptedOptions(): never {
        throw new Error('signature boom');
      },
      compress: async () => {
        calls++;
        throw new Error('engine must not run after the options lookup failed');
      },
    };
    await expect(compactSession(deps(bomb, { createRefresher: r.factory }), req(ref))).rejects.toThrow('signature boom');
    expect(calls).toBe(0);
    expect(r.made).toHaveLength(1);
    expect(await expectNoFurtherRefreshes(r.made[0]!)).toBe(true);
    await expectUntouched(ref);
  });

  it('C6 I3: an engine returning a malformed result is an error, after cleanup', async () => {
    const ref = await seedSession(c.store);
    const engine = testEngine(() => ({ items: 'nope' }) as never);
    await expect(compactSession(deps(engine), req(ref))).rejects.toThrow(/no items array/);
    await expectUntouched(ref);
  });

  it('C2 I3: the store read under the lease (beginAttempt) throws: propagates, lease released, engine not called', async () => {
    const ref = await seedSession(c.store);
    const store = withOverrides<LineageStore>(c.store, {
      beginAttempt: async () => {
        throw new Error('simulated store read failure');
      },
    });
    const engine = testEngine();
    await expect(compactSession(deps(engine, { store }), req(ref))).rejects.toThrow('simulated store read failure');
    expect(engine.calls).toHaveLength(0);
    await expectUntouched(ref);
  });

  it('C2 L6 I3: the ownership check right after begin finds no quorum → skipped/lease_unavailable, attempt cleared, engine not called', async () => {
    const ref = await seedSession(c.store);
    const lease = withOverrides(c.lease, { refresh: async () => ({ refreshed: false as const, reason: 'no_quorum' as const }) });
    const engine = testEngine();
    const out = await compactSession(deps(engine, { lease }), req(ref));
    expect(out).toMatchObject({ outcome: 'skipped', reason: 'lease_unavailable', sessionId: ref.sessionId });
    expect(out.items).toHaveLength(20);
    expect(engine.calls).toHaveLength(0);
    await expectUntouched(ref);
  });

  it('C2: a store error in the first write under the lease (the fence) is an error, never "lease backend unavailable"; the lease is released', async () => {
    const ref = await seedSession(c.store);
    const validation = Object.assign(new Error('Item size has exceeded the maximum allowed size'), {
      name: 'ValidationException',
      $fault: 'client',
    });
    const store = withOverrides<LineageStore>(c.store, { beginAttempt: () => Promise.reject(validation) });
    const engine = testEngine();
    await expect(compactSession(deps(engine, { store }), req(ref))).rejects.toBe(validation);
    expect(engine.calls).toHaveLength(0);
    await expectUntouched(ref);
  });

  it.each(['deleted', 'changed'] as const)(
    'L5 L3: lease key %s behind the refresher → it gives up, skipped/lease_lost, nothing committed, other holder untouched',
    async (how) => {
      const ref = await seedSession(c.store);
      const r = recordingRefreshers();
      const key = leaseKeyOf(ref);
      const engine = testEngine(async (_m, opts) => {
        if (how === 'deleted') await Promise.all(c.redis.map((n) => n.del(key)));
        else await Promise.all(c.redis.map((n) => n.set(key, 'intruder#1', 'PX', 10_000)));
        // The refresher's signal reaches the engine; wait for it to give up.
        await waitFor(() => opts.signal?.aborted === true, 'the refresher to give up');
        return { items: structuredClone(SUMMARY) };
      });
      const out = await compactSession(deps(engine, { createRefresher: r.factory }), req(ref));
      expect(out).toMatchObject({ outcome: 'skipped', reason: 'lease_lost', sessionId: ref.sessionId });
      expect(out.items).toHaveLength(20);
      expect(r.made[0]!.refresher.signal.aborted).toBe(true);
      const s = await snapshot(c.store, ref);
      expect(s.children).toEqual([]);
      expect(s.session?.attempt).toBeUndefined();
      expect(s.session?.endReason).toBeUndefined();
      if (how === 'changed') {
        // Token-checked release: the other holder's key survives our cleanup.
        expect(await c.lease.holderOf(sessionKey(ref))).toBe('intruder#1');
        await Promise.all(c.redis.map((n) => n.del(key)));
      } else {
        expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
      }
    },
  );
});
