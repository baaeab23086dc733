// Crash points: a child process runs a real compactSession and really dies (process.exit) after
// acquire, after beginAttempt, after the new messages were written, and after commit before
// release. Proves, for each: at most one child (I1), the lease frees itself by TTL and a later
// attempt is not locked out (L7, I3), and runSweep removes the attempt record and every message
// the crash left (S1, S2).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactSession } from '../../lib/compaction/index.js';
import { runSweep } from '../../lib/sweep/run-sweep.js';
import { recordCounts, scaled } from '../support/chaos/counts.js';
import { makeCoordinator, type Coordinator, seedConversation } from '../fixtures/coordinator.js';
import { buildCrashChild, CRASH_EXIT_CODE, crashPoints, runCrashChild } from '../support/chaos/crash-points.js';
import { conversation, fixedEngine } from '../fixtures/engines.js';
import { extraChildren, itemsUnder, strayGenerations, waitLeaseFree } from '../support/chaos/invariants.js';

const TTL_MS = 1500;
const rounds = scaled(1);
let coord: Coordinator;
const counts = { crashesInjected: 0, forksFound: 0, leakedLeases: 0 };

beforeAll(async () => {
  coord = await makeCoordinator();
  await buildCrashChild();
});
afterAll(async () => {
  recordCounts('crash-points', counts);
  await coord.close();
});

describe('crash points (child process dies mid-attempt)', () => {
  for (const point of crashPoints) {
    for (const mode of ['rotate', 'in_place'] as const) {
      it(`I1 I3 L7 S1 S2: crash ${point} (${mode}) leaves one lineage, a free lease after TTL, nothing after a sweep`, async () => {
        for (let round = 0; round < rounds; round++) {
          const tenantId = `chaos-crash-${randomUUID()}`;
          // The written-before-commit path needs a compaction bigger than one transaction (crash-child's engine keeps 110).
          const ref = await seedConversation(coord.store, tenantId, conversation(point === 'after_child_messages' ? 150 : 8));

          const run = await runCrashChild({
            CRASH_POINT: point,
            CRASH_TENANT: tenantId,
            CRASH_SESSION: ref.sessionId,
            CRASH_MODE: mode,
            LEASE_TTL_MS: String(TTL_MS),
          });
          expect(run.code, `child must die at ${point}: ${run.stderr.slice(-2000)}`).toBe(CRASH_EXIT_CODE);
          counts.crashesInjected++;

          // What the crash left behind, before anyone cleans it.
          const left = await coord.store.getSession(ref);
          const attempt = left?.attempt;
          if (point === 'after_acquire') expect(attempt).toBeUndefined();
          else if (point !== 'after_commit') expect(attempt?.pendingChildId).toBeTruthy();
          if (point === 'after_child_messages') {
            // The crash really left written-but-uncommitted messages for the sweep to find.
            const pending =
              mode === 'rotate'
                ? await itemsUnder(coord.ddb, coord.tableName, { tenantId, sessionId: attempt!.pendingChildId })
                : await strayGenerations(coord.ddb, coord.tableName, left!);
            expect(pending.length).toBeGreaterThan(0);
          }

          // The crashed holder never released: the lease must free itself by TTL (L7, I3).
          const free = await waitLeaseFree(coord.lease, ref, TTL_MS + 5000);
          if (!free) counts.leakedLeases++;
          expect(free).toBe(true);

          // Sweep with a clock past the attempt's recorded expiry (S1, S2).
          const sweep = await runSweep({ store: coord.store, now: () => Date.now() + TTL_MS });
          expect(sweep.forksFound).toBe(0);
          const after = await coord.store.getSession(ref);
          expect(after?.attempt).toBeUndefined();
          if (attempt && point !== 'after_commit') {
            // No pending child (rotation) and no unpublished generation (in place) survives.
            expect(await itemsUnder(coord.ddb, coord.tableName, { tenantId, sessionId: attempt.pendingChildId })).toEqual([]);
            expect(await strayGenerations(coord.ddb, coord.tableName, after!)).toEqual([]);
            expect(after?.childSessionId).toBeUndefined();
          }

          // A later attempt is not locked out and compacts (or adopts what the crash committed).
          const engine = fixedEngine();
          const later = await compactSession(
            { lease: coord.lease, store: coord.store, engine, leaseTtlMs: 5000 },
            { ref, mode, origin: 'manual', holder: 'after-crash' },
          );
          if (point === 'after_commit') {
            expect(later.outcome === 'skipped' ? later.reason : later.outcome).toMatch(
              mode === 'rotate' ? /^adopted$/ : /^(noop|compressed)$/,
            );
          } else {
            expect(later.outcome).toBe('compressed');
          }
          const extra = await extraChildren(coord.store, ref);
          counts.forksFound += extra;
          expect(extra).toBe(0);
          expect(await coord.lease.holderOf(`${tenantId}/${ref.sessionId}`)).toBeNull();
        }
      });
    }
  }
});
