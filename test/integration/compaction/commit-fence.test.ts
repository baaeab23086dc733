// Commit fence in a real attempt (SPEC C9) on Redis + DynamoDB Local.
import { describe, expect, it } from 'vitest';
import { CommitFence, compactSession } from '../../../lib/compaction/index.js';
import type { CompactionDeps } from '../../../lib/compaction/types.js';
import type { LineageStore } from '../../../lib/lineage/types.js';
import { sessionKey } from '../../../lib/session-ref.js';
import {
  contenderForSuite,
  depsOn,
  deferred,
  lineageFields,
  seedSession,
  snapshot,
  SUMMARY,
  testEngine,
  withOverrides,
} from '../../support/compaction-fixtures.js';

const c = contenderForSuite();

const deps = (extra: Partial<CompactionDeps>): CompactionDeps => depsOn(c, extra);

describe('commit fence', () => {
  it('C9: cancelled while the engine runs → outcome cancelled, input returned, no mutation, lease free; the next attempt commits', async () => {
    const ref = await seedSession(c.store);
    const before = await snapshot(c.store, ref);
    const started = deferred();
    const release = deferred();
    let commits = 0;
    const store = withOverrides<LineageStore>(c.store, {
      commitInPlace: (...a: Parameters<LineageStore['commitInPlace']>) => {
        commits++;
        return c.store.commitInPlace(...a);
      },
    });
    const engine = testEngine(async (_m, opts) => {
      started.resolve();
      await release.promise;
      expect(opts.signal?.aborted).toBe(true); // the engine hears about the cancel
      return { items: structuredClone(SUMMARY) };
    });
    const fence = new CommitFence();
    const running = compactSession(
      deps({ store, engine }),
      { ref, mode: 'in_place', origin: 'turn', holder: 'hygiene', returnInput: true },
      { commitFence: fence },
    );
    await started.promise;
    expect(await fence.cancel()).toBe(true);
    release.resolve();
    const out = await running;
    expect(out).toMatchObject({ outcome: 'cancelled', sessionId: ref.sessionId });
    expect(out.items).toEqual(before.items);
    expect(commits).toBe(0);
    const after = await snapshot(c.store, ref);
    expect(lineageFields(after.session)).toEqual(lineageFields(before.session));
    expect(after.session?.attempt).toBeUndefined();
    expect(after.items).toEqual(before.items);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();

    // A manual retry without a fence acquires the lease and commits in place.
    const retry = await compactSession(deps({ store }), { ref, mode: 'in_place', origin: 'manual', holder: 'retry' });
    expect(retry).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: ref.sessionId });
    expect((retry.outcome === 'compressed' ? retry.items : []).length).toBeLessThan(before.items.length);
    expect(commits).toBe(1);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('C9: cancel during the commit waits for it, reports false; tryCancel says commit_in_progress', async () => {
    const ref = await seedSession(c.store);
    const commitStarted = deferred();
    const letCommit = deferred();
    const store = withOverrides<LineageStore>(c.store, {
      commitRotation: async (...a: Parameters<LineageStore['commitRotation']>) => {
        commitStarted.resolve();
        await letCommit.promise;
        return c.store.commitRotation(...a);
      },
    });
    const fence = new CommitFence();
    const running = compactSession(deps({ store }), { ref, mode: 'rotate', origin: 'turn', holder: 'live-turn' }, { commitFence: fence });
    await commitStarted.promise;
    expect(fence.tryCancel()).toBe('commit_in_progress');
    let cancelSettled = false;
    const cancelling = fence.cancel().then((r) => {
      cancelSettled = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(cancelSettled).toBe(false);
    letCommit.resolve();
    expect(await cancelling).toBe(false);
    const out = await running;
    expect(out.outcome).toBe('compressed');
    expect(fence.tryCancel()).toBe('committed');
    expect(await c.store.children(ref)).toHaveLength(1);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('C9: remaining invocation time below the safety margin cancels before commit, with a warning', async () => {
    const ref = await seedSession(c.store);
    const before = await snapshot(c.store, ref);
    const engine = testEngine();
    const out = await compactSession(deps({ engine, commitSafetyMarginMs: 5_000, now: () => 1_000_000 }), {
      ref,
      mode: 'rotate',
      origin: 'turn',
      holder: 'lambda',
      remainingTimeMs: () => 1_000,
    });
    expect(out).toMatchObject({ outcome: 'cancelled', sessionId: ref.sessionId });
    expect(out.warnings.join(' ')).toMatch(/safety margin/);
    // The engine was told its deadline: now + remaining - margin.
    expect(engine.calls[0]!.options.deadline).toBe(1_000_000 + 1_000 - 5_000);
    const after = await snapshot(c.store, ref);
    expect(after.children).toEqual([]);
    expect(lineageFields(after.session)).toEqual(lineageFields(before.session));
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('C9: enough remaining time commits normally', async () => {
    const ref = await seedSession(c.store);
    const out = await compactSession(deps({ commitSafetyMarginMs: 5_000 }), {
      ref,
      mode: 'rotate',
      origin: 'turn',
      holder: 'lambda',
      remainingTimeMs: () => 60_000,
    });
    expect(out.outcome).toBe('compressed');
    expect(out.warnings).toEqual([]);
  });
});
