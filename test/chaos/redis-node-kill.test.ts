// Redis node faults on nodes this file owns: SIGKILL one (or two) of three while an attempt
// holds the lease, with rivals racing, then restart on the same port. Proves: the attempt
// either commits once or skips (I1, I2, L4), no lease outlives its attempt or TTL (I3, L7),
// and the lease works again once the node is back.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactSession, type CompactionOutcome } from '../../lib/compaction/index.js';
import { SessionLease } from '../../lib/lease/index.js';
import { sessionKey, type SessionRef } from '../../lib/session-ref.js';
import { recordCounts, scaled } from '../support/chaos/counts.js';
import { makeCoordinator, type Coordinator, seedConversation } from '../fixtures/coordinator.js';
import { conversation, fixedEngine, sleep } from '../fixtures/engines.js';
import { waitLeaseFree } from '../support/chaos/invariants.js';
import { startOwnRedisNodes, type OwnRedisNodes } from '../support/chaos/redis-nodes.js';

const TTL_MS = 2000;
let nodes: OwnRedisNodes;
let coord: Coordinator;
let lease: SessionLease;
const counts = { racesRun: 0, nodeFaultsInjected: 0, forksFound: 0, leakedLeases: 0 };

beforeAll(async () => {
  nodes = await startOwnRedisNodes(3);
  coord = await makeCoordinator({ redisClients: nodes.clients });
  lease = coord.lease;
});
afterAll(async () => {
  recordCounts('redis-node-kill', counts);
  await coord?.close();
  await nodes?.stop();
});

async function seeded(): Promise<SessionRef> {
  const tenantId = `chaos-redis-${randomUUID()}`;
  return seedConversation(coord.store, tenantId, conversation(8));
}

/** Runs `contenders` attempts on one session; the first to reach its engine triggers `fault`. */
async function raceWithFault(ref: SessionRef, contenders: number, fault: () => Promise<void>): Promise<CompactionOutcome[]> {
  let faulted: Promise<void> | undefined;
  const engine = fixedEngine({
    hold: async () => {
      faulted ??= fault();
      await faulted;
    },
  });
  counts.racesRun += contenders;
  return Promise.all(
    Array.from({ length: contenders }, (_, i) =>
      compactSession(
        { lease, store: coord.store, engine, leaseTtlMs: TTL_MS },
        { ref, mode: i % 2 ? 'in_place' : 'rotate', origin: 'turn', holder: `kill-${i}` },
      ).catch((err: unknown) => {
        throw new Error(`attempt ${i} threw instead of returning an outcome: ${String(err)}`);
      }),
    ),
  );
}

async function assertSingleLineage(ref: SessionRef, outcomes: CompactionOutcome[]): Promise<void> {
  const children = await coord.store.children(ref);
  counts.forksFound += Math.max(0, children.length - 1);
  expect(children.length).toBeLessThanOrEqual(1);
  const compressed = outcomes.filter((o) => o.outcome === 'compressed');
  // Whatever the fault, at most one attempt wins while it holds the lease; the rest skip.
  expect(compressed.length).toBeLessThanOrEqual(1);
  for (const o of outcomes) {
    if (o.outcome === 'skipped') expect(['locked', 'lease_unavailable', 'lease_lost', 'adopted']).toContain(o.reason);
  }
  if (children.length === 1) expect(compressed.map((o) => o.sessionId)).toEqual([children[0]!.sessionId]);
}

async function assertLeaseFreeAfterRestart(ref: SessionRef): Promise<void> {
  await nodes.ready();
  const free = await waitLeaseFree(lease, ref, TTL_MS + 5000);
  if (!free) counts.leakedLeases++;
  expect(free).toBe(true);
  // The restarted node is a full member again: a fresh acquire needs and gets a quorum of all three.
  const probe = await lease.tryAcquire(sessionKey(ref), { ttlMs: 1000, holder: 'probe' });
  expect(probe.acquired).toBe(true);
  if (probe.acquired) expect((await lease.release(probe)).released).toBe(true);
}

describe('Redis node killed during an attempt', () => {
  it('L4 I1 I2 I3: one of three SIGKILLed while the winner compacts: commits once, rivals skip, lease free after restart', async () => {
    for (let round = 0; round < scaled(3); round++) {
      const ref = await seeded();
      const victim = round % 3;
      const outcomes = await raceWithFault(ref, 4, async () => {
        await nodes.kill(victim);
        counts.nodeFaultsInjected++;
      });
      await assertSingleLineage(ref, outcomes);
      // One node down keeps the quorum: the winner still commits (L4).
      expect(outcomes.filter((o) => o.outcome === 'compressed')).toHaveLength(1);
      await nodes.restart(victim);
      await assertLeaseFreeAfterRestart(ref);
    }
  });

  it('L4 L6 I1 I3: two of three SIGKILLed mid-attempt: no fork, nothing held past the TTL, works after restart', async () => {
    for (let round = 0; round < scaled(2); round++) {
      const ref = await seeded();
      const outcomes = await raceWithFault(ref, 3, async () => {
        await Promise.all([nodes.kill(1), nodes.kill(2)]);
        counts.nodeFaultsInjected += 2;
        // Long enough for the refresher to notice the lost quorum at least once.
        await sleep(TTL_MS / 2 + 200);
      });
      await assertSingleLineage(ref, outcomes);
      // New attempts fail fast and closed while the quorum is gone (C2).
      const engine = fixedEngine();
      const during = await compactSession(
        { lease, store: coord.store, engine, leaseTtlMs: TTL_MS },
        { ref, mode: 'rotate', origin: 'turn', holder: 'during' },
      );
      expect(during.outcome === 'skipped' && during.reason).toBe('lease_unavailable');
      expect(engine.calls).toBe(0);
      await Promise.all([nodes.restart(1), nodes.restart(2)]);
      await assertLeaseFreeAfterRestart(ref);
      const after = await compactSession(
        { lease, store: coord.store, engine, leaseTtlMs: TTL_MS },
        { ref, mode: 'rotate', origin: 'turn', holder: 'after' },
      );
      expect(['compressed', 'skipped']).toContain(after.outcome);
      if (after.outcome === 'skipped') expect(after.reason).toBe('adopted');
      await assertSingleLineage(ref, [...outcomes, after]);
    }
  });
});
