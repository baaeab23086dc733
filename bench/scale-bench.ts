// Many distinct sessions compacted concurrently (bounded): throughput and how it grows.
import { randomUUID } from 'node:crypto';
import { compactSession } from '../lib/compaction/index.js';
import type { LeaseApi } from '../lib/lease/index.js';
import type { DynamoLineageStore } from '../lib/lineage/dynamo/store.js';
import { fixedEngine } from '../test/fixtures/engines.js';
import { seedConversation } from '../test/fixtures/coordinator.js';
import { conversation } from '../test/fixtures/engines.js';
import { round } from './stats.js';
import { mapLimit } from '../test/fixtures/map-limit.js';

export interface ScaleRow {
  sessions: number;
  concurrency: number;
  seconds: number;
  perSecond: number;
  compressed: number;
  forks: number;
  other: Record<string, number>;
}

export async function benchScale(
  deps: { lease: LeaseApi; store: DynamoLineageStore },
  sizes: readonly number[],
  concurrency = 32,
): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = [];
  const engine = fixedEngine();
  for (const n of sizes) {
    const tenantId = `bench-scale-${randomUUID()}`;
    const refs = await mapLimit(Array.from({ length: n }), concurrency, () => seedConversation(deps.store, tenantId, conversation(6)));
    const other: Record<string, number> = {};
    let compressed = 0;
    const t0 = performance.now();
    await mapLimit(refs, concurrency, async (ref, i) => {
      const r = await compactSession(
        { lease: deps.lease, store: deps.store, engine, leaseTtlMs: 10_000 },
        { ref, mode: i % 2 ? 'rotate' : 'in_place', origin: 'turn', holder: `scale-${i}` },
      );
      if (r.outcome === 'compressed') compressed++;
      else other[r.outcome] = (other[r.outcome] ?? 0) + 1;
    });
    const seconds = (performance.now() - t0) / 1000;
    const childCounts = await mapLimit(refs, concurrency, async (ref) => (await deps.store.children(ref)).length);
    rows.push({
      sessions: n,
      concurrency,
      seconds: round(seconds, 2),
      perSecond: round(n / seconds, 1),
      compressed,
      forks: childCounts.reduce((a, c) => a + Math.max(0, c - 1), 0),
      other,
    });
  }
  return rows;
}
