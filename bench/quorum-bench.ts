// Quorum loss: with 2 of 3 Redis nodes stopped, how fast a request learns `lease_unavailable`.
import { randomUUID } from 'node:crypto';
import { compactSession } from '../lib/compaction/index.js';
import { LeaseUnavailableError, SessionLease } from '../lib/lease/index.js';
import type { DynamoLineageStore } from '../lib/lineage/dynamo/store.js';
import { fixedEngine } from '../test/fixtures/engines.js';
import { startOwnRedisNodes } from '../test/support/chaos/redis-nodes.js';
import { seedConversation } from '../test/fixtures/coordinator.js';
import { conversation } from '../test/fixtures/engines.js';
import { round, summarize, timeIt, type Summary } from './stats.js';

export interface QuorumBenchResult {
  iterations: number;
  normalAcquire: Summary;
  acquireToUnavailable: Summary;
  /** Whole compactSession call to outcome skipped/lease_unavailable (real store). */
  compactionToSkipped: Summary;
  ratioP50: number;
  outcomes: Record<string, number>;
  engineCalls: number;
}

export async function benchQuorumLoss(store: DynamoLineageStore, iterations: number): Promise<QuorumBenchResult> {
  const nodes = await startOwnRedisNodes(3);
  try {
    const lease = new SessionLease({ clients: nodes.clients, keyPrefix: 'bench-quorum:' });
    const normal: number[] = [];
    for (let i = 0; i < iterations; i++) {
      let got: Awaited<ReturnType<SessionLease['tryAcquire']>> | undefined;
      normal.push(await timeIt(async () => (got = await lease.tryAcquire(`q/${randomUUID()}`, { ttlMs: 5000, holder: 'bench' }))));
      if (got?.acquired) await lease.release(got);
    }
    await nodes.kill(1);
    await nodes.kill(2);
    const unavailable: number[] = [];
    for (let i = 0; i < iterations; i++) {
      const t0 = performance.now();
      try {
        await lease.tryAcquire(`q/${randomUUID()}`, { ttlMs: 5000, holder: 'bench' });
        throw new Error('bench: acquire succeeded without quorum');
      } catch (err) {
        if (!(err instanceof LeaseUnavailableError)) throw err;
      }
      unavailable.push(performance.now() - t0);
    }
    const realLease = new SessionLease({ clients: nodes.clients, keyPrefix: 'bench-quorum:' });
    const engine = fixedEngine();
    const outcomes: Record<string, number> = {};
    const compaction: number[] = [];
    for (let i = 0; i < Math.max(3, Math.ceil(iterations / 4)); i++) {
      const ref = await seedConversation(store, `bench-quorum-${randomUUID()}`, conversation(8));
      compaction.push(
        await timeIt(async () => {
          const r = await compactSession(
            { lease: realLease, store, engine, leaseTtlMs: 5000 },
            { ref, mode: 'rotate', origin: 'turn', holder: 'bench' },
          );
          const k = r.outcome === 'skipped' ? `skipped:${r.reason}` : r.outcome;
          outcomes[k] = (outcomes[k] ?? 0) + 1;
        }),
      );
    }
    const n = summarize(normal);
    const u = summarize(unavailable);
    return {
      iterations,
      normalAcquire: n,
      acquireToUnavailable: u,
      compactionToSkipped: summarize(compaction),
      ratioP50: round(u.p50 / n.p50, 2),
      outcomes,
      engineCalls: engine.calls,
    };
  } finally {
    await nodes.stop();
  }
}
