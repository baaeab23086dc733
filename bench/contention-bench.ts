// N contenders on one session: how fast losers are told `skipped`, and that nothing forks or leaks.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { compactSession } from '../lib/compaction/index.js';
import type { LeaseApi } from '../lib/lease/index.js';
import type { LineageStore } from '../lib/lineage/types.js';
import { sessionKey } from '../lib/session-ref.js';
import { fixedEngine, sleep } from '../test/support/chaos/engines.js';
import { seedSession } from './commit-bench.js';
import { round, summarize, timeIt, type Summary } from './stats.js';

export interface ContentionRow {
  contenders: number;
  rounds: number;
  /** Whole compactSession call of a loser, to its `skipped` outcome (includes reading the input back). */
  loserSkip: Summary;
  /** The losers' tryAcquire alone (SET NX on every node, undo, read the holder). */
  loserLeaseDecision: Summary;
  redisRoundTrip: Summary;
  /** loser time-to-skipped p50 / one Redis GET p50. */
  ratioP50: number;
  outcomes: Record<string, number>;
  forks: number;
  leakedLeases: number;
}

export async function benchContention(
  deps: { lease: LeaseApi; store: LineageStore; redis: Redis[] },
  contenderCounts: readonly number[],
  rounds: number,
  /** How long the winner's engine runs, so losers really race a held lease. */
  holdMs = 300,
): Promise<ContentionRow[]> {
  const rows: ContentionRow[] = [];
  for (const n of contenderCounts) {
    const skipTimes: number[] = [];
    const decisionTimes: number[] = [];
    const lease: LeaseApi = {
      tryAcquire: async (key, opts) => {
        const t0 = performance.now();
        const r = await deps.lease.tryAcquire(key, opts);
        if (!r.acquired) decisionTimes.push(performance.now() - t0);
        return r;
      },
      refresh: (l, ttl) => deps.lease.refresh(l, ttl),
      release: (l) => deps.lease.release(l),
      holderOf: (key) => deps.lease.holderOf(key),
    };
    const rtt: number[] = [];
    const outcomes: Record<string, number> = {};
    let forks = 0;
    let leaked = 0;
    for (let r = 0; r < rounds; r++) {
      const ref = await seedSession(deps.store, `bench-contend-${randomUUID()}`);
      const engine = fixedEngine({ hold: () => sleep(holdMs) });
      await Promise.all(
        Array.from({ length: n }, async (_, i) => {
          const t0 = performance.now();
          const res = await compactSession(
            { lease, store: deps.store, engine, leaseTtlMs: 10_000 },
            { ref, mode: 'rotate', origin: 'turn', holder: `contender-${i}` },
          );
          const dt = performance.now() - t0;
          const k = res.outcome === 'skipped' || res.outcome === 'noop' ? `${res.outcome}:${res.reason}` : res.outcome;
          outcomes[k] = (outcomes[k] ?? 0) + 1;
          if (res.outcome === 'skipped' && res.reason === 'locked') skipTimes.push(dt);
        }),
      );
      const children = await deps.store.children(ref);
      forks += Math.max(0, children.length - 1);
      if ((await deps.lease.holderOf(sessionKey(ref))) !== null) leaked++;
      for (let k = 0; k < 5; k++) rtt.push(await timeIt(() => deps.redis[0]!.get(`bench-rtt:${ref.sessionId}`)));
    }
    const loserSkip = summarize(skipTimes);
    const redisRoundTrip = summarize(rtt);
    rows.push({
      contenders: n,
      rounds,
      loserSkip,
      loserLeaseDecision: summarize(decisionTimes),
      redisRoundTrip,
      ratioP50: skipTimes.length ? round(loserSkip.p50 / redisRoundTrip.p50, 1) : Number.NaN,
      outcomes,
      forks,
      leakedLeases: leaked,
    });
  }
  return rows;
}
