// Randomised interleavings (fast-check): many contenders with random start delays, engine
// durations, modes and cancellations race on one session while a client keeps appending.
// In every generated run: at most one child (I1), every "you rotated" names that child and
// their count equals the children (I2), no lease is left (I3), and every appended message is
// either in the live session or was handed to an engine whose attempt committed (I4).
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommitFence, compactSession, type CompactionOutcome } from '../../lib/compaction/index.js';
import { asIs } from '../../lib/lineage/prepare.js';
import { SessionEndedError } from '../../lib/lineage/errors.js';
import type { Item as Message } from '../../lib/items/types.js';
import { sessionKey, type SessionRef } from '../../lib/session-ref.js';
import { recordCounts, scaled } from '../support/chaos/counts.js';
import { makeCoordinator, type Coordinator, seedConversation } from '../fixtures/coordinator.js';
import { conversation, fixedEngine, sleep } from '../fixtures/engines.js';
import { liveTip } from '../support/chaos/invariants.js';

let coord: Coordinator;
const counts = { racesRun: 0, interleavingsExplored: 0, forksFound: 0, leakedLeases: 0 };
const outcomes: Record<string, number> = {};

beforeAll(async () => {
  coord = await makeCoordinator();
});
afterAll(async () => {
  recordCounts('interleavings', counts);
  console.log(
    `interleavings: ${counts.interleavingsExplored} runs explored, ${counts.racesRun} contenders raced; outcomes ${JSON.stringify(outcomes)}`,
  );
  await coord.close();
});

const contender = fc.record({
  startDelay: fc.integer({ min: 0, max: 40 }),
  engineDelay: fc.integer({ min: 0, max: 80 }),
  mode: fc.constantFrom('rotate' as const, 'in_place' as const),
  cancelAfter: fc.option(fc.integer({ min: 0, max: 100 }), { nil: undefined }),
});
const scenario = fc.record({
  contenders: fc.array(contender, { minLength: 2, maxLength: 6 }),
  appendDelays: fc.array(fc.integer({ min: 0, max: 120 }), { maxLength: 5 }),
});

/** A client appending one message: follows the lineage to the live child when the parent ended. */
async function appendFollowing(ref: SessionRef, msg: Message): Promise<void> {
  let target = ref;
  for (let hop = 0; hop < 5; hop++) {
    try {
      await coord.store.appendItems(target, { prepare: asIs([msg]) });
      return;
    } catch (err) {
      if (err instanceof SessionEndedError && err.liveSessionId) target = { tenantId: ref.tenantId, sessionId: err.liveSessionId };
      else throw err;
    }
  }
  throw new Error('append: lineage did not settle');
}

describe('randomised interleavings', () => {
  it('I1 I2 I3 I4 C9: hold in every generated run of contenders, appends and cancellations', async () => {
    const numRuns = scaled(20);
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        counts.interleavingsExplored++;
        counts.racesRun += s.contenders.length;
        const tenantId = `chaos-race-${randomUUID()}`;
        const ref = await seedConversation(coord.store, tenantId, conversation(6));

        const summarized = new Set<string>();
        const appended: string[] = [];
        const results = await Promise.all([
          ...s.contenders.map(async (c, i) => {
            await sleep(c.startDelay);
            const seen: string[] = [];
            const engine = fixedEngine({
              onCall: (m) => seen.push(...m.map((x) => x.content as string)),
              hold: () => sleep(c.engineDelay),
            });
            const commitFence = new CommitFence();
            let cancelledBeforeCommit: boolean | undefined;
            if (c.cancelAfter !== undefined) {
              setTimeout(() => void commitFence.cancel().then((r) => (cancelledBeforeCommit = r)), c.cancelAfter);
            }
            const out: CompactionOutcome = await compactSession(
              { lease: coord.lease, store: coord.store, engine, leaseTtlMs: 10_000 },
              { ref, mode: c.mode, origin: 'turn', holder: `racer-${i}` },
              { commitFence },
            );
            const key = out.outcome === 'skipped' || out.outcome === 'noop' ? `${out.outcome}:${out.reason}` : `${out.outcome}:${c.mode}`;
            outcomes[key] = (outcomes[key] ?? 0) + 1;
            if (out.outcome === 'compressed') for (const x of seen) summarized.add(x);
            // C9: a cancel that reported success means this attempt did not commit.
            if (cancelledBeforeCommit === true) expect(out.outcome).not.toBe('compressed');
            return { out, mode: c.mode };
          }),
          ...s.appendDelays.map(async (d, k) => {
            await sleep(d);
            const content = `append-${k}-${randomUUID()}`;
            await appendFollowing(ref, { role: 'user', content });
            appended.push(content);
            return null;
          }),
        ]);

        const children = await coord.store.children(ref);
        counts.forksFound += Math.max(0, children.length - 1);
        expect(children.length).toBeLessThanOrEqual(1); // I1
        const rotated = results.filter((r) => r?.out.outcome === 'compressed' && r.mode === 'rotate');
        expect(rotated.length).toBe(children.length); // I2
        for (const r of rotated) expect(r!.out.sessionId).toBe(children[0]!.sessionId);

        const held = await coord.lease.holderOf(sessionKey(ref));
        if (held !== null) counts.leakedLeases++;
        expect(held).toBeNull(); // I3

        const tip = await liveTip(coord.store, ref);
        const live = new Set((await coord.store.readAll(tip)).map((m) => m.content as string));
        const lost = appended.filter((a) => !live.has(a) && !summarized.has(a));
        expect(lost).toEqual([]); // I4
      }),
      { numRuns, endOnFailure: true },
    );
  });
});
