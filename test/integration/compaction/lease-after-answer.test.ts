// P6's last sentence (issue 35 item 3): an attempt whose request was answered blocks no other
// caller for longer than one lease TTL. The 90 s lock of the adversarial pass: a long compress
// ran into its invocation's deadline and was answered 503, yet the attempt went on in the
// background (a stalled store, a long summary) and its refresher kept renewing the lease and
// extending the attempt record, so every compress on that session answered `locked`. Now the
// refresher renews nothing past the invocation's commit margin (no commit is possible then, C9).
import { describe, expect, it } from 'vitest';
import { compactSession } from '../../../lib/compaction/index.js';
import type { CompactionOutcome } from '../../../lib/compaction/types.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { contenderForSuite, deferred, depsOn, seedSession, snapshot, testEngine, waitFor } from '../../support/compaction-fixtures.js';

const c = contenderForSuite();
const TTL_MS = 1_500;

describe('no attempt outlives its answered request by more than the lease TTL (P6)', () => {
  it('P6: an attempt stuck past its invocation deadline stops renewing; within one TTL another caller takes the lease and commits', async () => {
    const ref = await seedSession(c.store);
    const stuck = deferred();
    const engine = testEngine(async (items) => {
      await stuck.promise; // the long summary (or a stalled store) that outlives the invocation
      return { items: [...items.slice(0, 1)] };
    });
    // Two seconds of invocation left, one of them the commit margin: the answer is due in about one.
    const end = Date.now() + 2_000;
    let refreshes = 0;
    let refreshesAfterDeadline = 0;
    const lease = new Proxy(c.lease, {
      get(t, prop) {
        const v = Reflect.get(t, prop, t) as unknown;
        if (prop !== 'refresh' || typeof v !== 'function') return typeof v === 'function' ? (v as () => unknown).bind(t) : v;
        return (...args: unknown[]) => {
          refreshes++;
          if (Date.now() >= end - 1_000) refreshesAfterDeadline++;
          return (v as (...a: unknown[]) => unknown).apply(t, args);
        };
      },
    });
    const first: Promise<CompactionOutcome> = compactSession(
      depsOn(c, { engine, lease, leaseTtlMs: TTL_MS, refreshIntervalMs: 200, commitSafetyMarginMs: 1_000 }),
      { ref, mode: 'rotate', origin: 'manual', holder: 'answered', remainingTimeMs: () => end - Date.now() },
    );
    try {
      let early: unknown;
      void first.then(
        (o) => (early = o),
        (e: unknown) => (early = e),
      );
      await waitFor(() => engine.calls.length === 1 || early !== undefined, 'the first attempt to reach its engine', 20_000);
      expect(early).toBeUndefined();
      // The request has been answered (its deadline passed); the attempt is still at work.
      // Before the fix the refresher renewed the lease every 200 ms for as long as it worked.
      await waitFor(async () => (await c.lease.holderOf(sessionKey(ref))) === null, 'the stuck attempt to let its lease lapse', 15_000);
      expect(refreshesAfterDeadline).toBe(0);
      expect(refreshes).toBeGreaterThan(0);
      // Another caller is not refused: the lease is free and the attempt record's expiry passed (TAKEOVER).
      const second = await compactSession(depsOn(c, { leaseTtlMs: 10_000 }), { ref, mode: 'rotate', origin: 'manual', holder: 'next' });
      expect(second.outcome).toBe('compressed');
    } finally {
      stuck.resolve();
    }
    // The stuck attempt, let go at last, commits nothing (C9 cancels it, or its fence was replaced).
    expect((await first).outcome).not.toBe('compressed');
    expect((await snapshot(c.store, ref)).children).toHaveLength(1);
  }, 60_000);
});
