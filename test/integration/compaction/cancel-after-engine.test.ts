// C9 after the engine (issue 22 finding 6): a cancel that arrives after the engine returned, while
// the token counter loads or from the Lambda clock (remainingTimeMs), must still stop the commit:
// the commit fence's enterCommit() is the last word. Interleavings are forced by hooks on the two
// calls the attempt makes in that window, never by sleeps.
import { describe, expect, it, vi } from 'vitest';
import { CommitFence, compactSession } from '../../../lib/compaction/index.js';
import type { CompactionDeps } from '../../../lib/compaction/types.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { contenderForSuite, depsOn, lineageFields, seedSession, snapshot, testEngine } from '../../support/compaction-fixtures.js';

/** Runs once per attempt as it loads the token counter (after the engine returned, before the commit). */
const hooks = vi.hoisted(() => ({ onTokenCounterLoad: undefined as (() => void) | undefined }));

vi.mock('../../../lib/items/tokens.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../../lib/items/tokens.js')>();
  return {
    ...original,
    loadTokenCounter: () => {
      const hook = hooks.onTokenCounterLoad;
      hooks.onTokenCounterLoad = undefined;
      hook?.();
      return original.loadTokenCounter();
    },
  };
});

const c = contenderForSuite();
const deps = (extra: Partial<CompactionDeps> = {}): CompactionDeps => depsOn(c, extra);

async function expectUntouched(ref: Parameters<typeof snapshot>[1], before: Awaited<ReturnType<typeof snapshot>>): Promise<void> {
  const after = await snapshot(c.store, ref);
  expect(lineageFields(after.session)).toEqual(lineageFields(before.session));
  expect(after.items).toEqual(before.items);
  expect(after.children).toEqual([]);
  expect(after.session?.attempt).toBeUndefined();
  expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
}

describe('C9: a cancel after the engine returned', () => {
  it.each(['rotate', 'in_place'] as const)(
    'C9: cancelled while the token counter loads (engine done) → cancelled, cancel() true, nothing committed (%s)',
    async (mode) => {
      const ref = await seedSession(c.store);
      const before = await snapshot(c.store, ref);
      const fence = new CommitFence();
      const engine = testEngine();
      let cancelled: Promise<boolean> | undefined;
      hooks.onTokenCounterLoad = () => {
        expect(engine.calls).toHaveLength(1); // the engine has returned
        cancelled = fence.cancel();
      };
      const out = await compactSession(
        deps({ engine }),
        { ref, mode, origin: 'turn', holder: 'c9-tokens', returnInput: true },
        { commitFence: fence },
      );
      expect(cancelled).toBeDefined();
      expect(await cancelled).toBe(true);
      expect(out).toMatchObject({ outcome: 'cancelled', sessionId: ref.sessionId });
      expect(out.items).toEqual(before.items);
      await expectUntouched(ref, before);
    },
  );

  it('C9: cancelled from inside remainingTimeMs() with time to spare → cancelled, nothing committed', async () => {
    const ref = await seedSession(c.store);
    const before = await snapshot(c.store, ref);
    const fence = new CommitFence();
    const engine = testEngine();
    let cancelled: Promise<boolean> | undefined;
    const remainingTimeMs = () => {
      // The first call sets the engine's deadline; the one after the engine is the pre-commit check.
      if (engine.calls.length === 1 && !cancelled) cancelled = fence.cancel();
      return 60_000;
    };
    const out = await compactSession(
      deps({ engine }),
      { ref, mode: 'rotate', origin: 'turn', holder: 'c9-clock', remainingTimeMs },
      { commitFence: fence },
    );
    expect(cancelled).toBeDefined();
    expect(await cancelled).toBe(true);
    expect(out).toMatchObject({ outcome: 'cancelled', sessionId: ref.sessionId });
    await expectUntouched(ref, before);
  });
});
