// N contenders on one session: how fast losers are told `skipped`, and that nothing forks or leaks.
// SPEC P2 in isolation: one losing compactSession (the lease is held) vs one bare SET NX PX round
// on the same nodes, alternated in one run.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { compactSession } from '../lib/compaction/index.js';
import type { LeaseApi } from '../lib/lease/index.js';
import { sessionKey } from '../lib/session-ref.js';
import { fixedEngine, sleep } from '../test/fixtures/engines.js';
import { seedConversation } from '../test/fixtures/coordinator.js';
import { conversation } from '../test/fixtures/engines.js';
import type { DynamoLineageStore } from '../lib/lineage/dynamo/store.js';
import { compare, round, summarize, timeIt, type Comparison, type Summary } from './stats.js';

export interface ContentionRow {
  contenders: number;
  rounds: number;
  /** Whole compactSession call of a loser, to its `skipped` outcome (one Redis round, nothing read: P2). */
  loserSkip: Summary;
  /** The losers' tryAcquire alone (SET NX PX GET on every node). */
  loserLeaseDecision: Summary;
  redisRoundTrip: Summary;
  /** loser time-to-skipped p50 / one Redis GET p50. */
  ratioP50: number;
  outcomes: Record<string, number>;
  forks: number;
  leakedLeases: number;
}

export async function benchContention(
  deps: { lease: LeaseApi; store: DynamoLineageStore; redis: Redis[] },
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
      const ref = await seedConversation(deps.store, `bench-contend-${randomUUID()}`, conversation(8));
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

/** P2: a loser (lease held by someone else) vs a bare SET NX PX on every node in parallel, alternated. */
export async function benchLoser(
  deps: { lease: LeaseApi; store: DynamoLineageStore; redis: Redis[] },
  iterations: number,
): Promise<Comparison> {
  const ref = await seedConversation(deps.store, `bench-loser-${randomUUID()}`, conversation(1000));
  const held = await deps.lease.tryAcquire(sessionKey(ref), { ttlMs: 600_000, holder: 'bench-holder' });
  if (!held.acquired) throw new Error('bench: could not take the lease for the loser bench');
  const engine = fixedEngine();
  const loser: number[] = [];
  const bare: number[] = [];
  try {
    const lose = () =>
      compactSession(
        { lease: deps.lease, store: deps.store, engine, leaseTtlMs: 10_000 },
        { ref, mode: 'rotate', origin: 'turn', holder: 'loser' },
      ).then((r) => {
        if (r.outcome !== 'skipped') throw new Error(`bench: a loser got ${r.outcome}`);
      });
    const setNx = () => Promise.all(deps.redis.map((c) => c.set(`bench-bare:${randomUUID()}`, 'x', 'PX', 10_000, 'NX')));
    for (let i = 0; i < iterations + 20; i++) {
      const [l, b] = i % 2 === 0 ? [await timeIt(lose), await timeIt(setNx)] : [await timeIt(setNx), await timeIt(lose)].reverse();
      if (i >= 20) {
        loser.push(l!);
        bare.push(b!);
      }
    }
  } finally {
    await deps.lease.release(held);
  }
  if (engine.calls !== 0) throw new Error('bench: a loser called the engine');
  return compare(loser, bare);
}
