// Sweep runs, each on a table of its own (a sweep lists the whole table): idle, with expired
// attempts to clean, with rotations to audit since its last run, and idle again with a long
// history of rotations before its checkpoint (the audit must not read them).
import { randomUUID } from 'node:crypto';
import { DynamoLineageStore } from '../../lib/lineage/dynamo/store.js';
import { asIs } from '../../lib/lineage/prepare.js';
import { sweepDeps } from '../../lib/runtime.js';
import type { SessionRef } from '../../lib/session-ref.js';
import { runSweep, type SweepResult } from '../../lib/sweep/run-sweep.js';
import { chatItems, seeded } from './fixtures.js';
import type { MeasuredOperation } from './operations.js';
import type { Probe, ProbeOptions } from './probe.js';
import { startProbe } from './probe.js';

export interface SweepScale {
  expired: number;
  recentRotations: number;
  oldRotations: number;
}

export const SWEEP_SCALE: SweepScale = { expired: 100, recentRotations: 100, oldRotations: 200 };

type Setup = (p: Probe) => Promise<void>;

export async function measureSweeps(
  base: Omit<ProbeOptions, 'tableName'>,
  scale: SweepScale = SWEEP_SCALE,
): Promise<{ operations: MeasuredOperation[]; results: Record<string, SweepResult> }> {
  const scenarios: [string, Setup, (r: SweepResult) => boolean][] = [
    ['sweep run, nothing to do', async () => undefined, (r) => r.expiredAttemptsCleaned === 0],
    [
      `sweep run, ${scale.expired} expired attempts`,
      (p) => expiredAttempts(p, scale.expired),
      (r) => r.expiredAttemptsCleaned === scale.expired,
    ],
    [
      `sweep run, ${scale.recentRotations} rotations since its last run`,
      (p) => rotations(p.core.store, scale.recentRotations),
      (r) => r.forksFound === 0,
    ],
    [
      `sweep run, nothing to do, ${scale.oldRotations} older rotations before its checkpoint`,
      // Rotations three hours old: long before the checkpoint the warm-up run leaves.
      (p) =>
        rotations(
          new DynamoLineageStore({ client: p.core.dynamo, tableName: p.tableName, now: () => Date.now() - 3 * 3600_000 }),
          scale.oldRotations,
        ),
      (r) => r.forksFound === 0,
    ],
  ];
  const operations: MeasuredOperation[] = [];
  const results: Record<string, SweepResult> = {};
  for (const [name, setup, ok] of scenarios) {
    const p = await startProbe({ ...base, tableName: `capacity-sweep-${randomUUID().slice(0, 8)}` });
    try {
      const deps = await sweepDeps(p.rt);
      const old = name.includes('older');
      if (old) await setup(p);
      await runSweep(deps); // leaves the checkpoint a real deployment has
      if (!old) await setup(p);
      let result: SweepResult | undefined;
      const cost = await p.measure(name, async () => {
        result = await runSweep(deps);
      });
      if (!result || !ok(result)) throw new Error(`bench: ${name} did not do what it should: ${JSON.stringify(result)}`);
      results[name] = result;
      operations.push({ group: 'sweep', ...cost });
    } finally {
      await p.close();
    }
  }
  return { operations, results };
}

/** Sessions whose compaction began and died: the attempt record's lease expired a minute ago, nothing holds it in Redis. */
async function expiredAttempts(p: Probe, n: number): Promise<void> {
  const tenantId = `sweep-${randomUUID().slice(0, 8)}`;
  for (let i = 0; i < n; i++) {
    const ref = await seeded(p.core.store, tenantId, 2);
    await p.core.store.beginAttempt(ref, {
      holder: `crashed-${i}`,
      leaseExpiresAt: Date.now() - 60_000,
      activityLabel: 'compaction started',
    });
  }
}

async function rotations(store: DynamoLineageStore, n: number): Promise<void> {
  const tenantId = `sweep-${randomUUID().slice(0, 8)}`;
  for (let i = 0; i < n; i++) {
    const r = await store.createSession({ tenantId, source: 'capacity-bench' });
    if (r.replayed) throw new Error('unexpected replay');
    const ref: SessionRef = { tenantId, sessionId: r.session.sessionId };
    await store.appendItems(ref, { prepare: asIs(chatItems(4)) });
    const begun = await store.beginAttempt(ref, {
      holder: `rotate-${i}`,
      leaseExpiresAt: Date.now() + 60_000,
      activityLabel: 'compaction started',
    });
    await store.commitRotation(ref, begun, { compacted: chatItems(2, 100), tokenEstimates: [1, 1], activityLabel: 'compaction completed' });
  }
}
