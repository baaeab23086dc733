// SPEC P6 (issue 35): an attempt reads, summarizes and writes at most a bounded part, whatever the
// session's length. A scaled-down long session (2,000 turns against a bound of about 200) proves
// the properties the chaos suite proves at 50,000 turns (test/chaos/long-session.test.ts):
// repeated partial attempts converge, every item is kept verbatim or counted in one summary, C7,
// C8, I4 and A6 hold for partial commits, and the round trips of one attempt do not grow with the
// session.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AfterTurnConsumer } from '../../../lib/after-turn/consumer.js';
import { afterTurnPersistence } from '../../../lib/after-turn/idempotency.js';
import { compactSession } from '../../../lib/compaction/index.js';
import { HeldAttempts } from '../../../lib/compaction/held-attempts.js';
import type { CompactionDeps, CompactionOutcome, CompactRequest } from '../../../lib/compaction/types.js';
import { SUMMARY_PREFIX, type Item } from '../../../lib/items/types.js';
import type { AttemptBudget, SessionRecord } from '../../../lib/lineage/types.js';
import { sessionKey, type SessionRef } from '../../../lib/session-ref.js';
import { conserved, countingEngine, longSession, turn } from '../../support/bounded-fixtures.js';
import { appendTo, contendersForSuite, deferred, depsOn, testEngine, type Contender } from '../../support/compaction-fixtures.js';
import { RoundTrips } from '../../support/round-trips.js';
import { lambdaContext } from '../after-turn/harness.js';

const [c] = contendersForSuite(1) as [Contender];
/** About 200 turns of ~120 bytes: two rows of the 100-turn appends the sessions are built from. */
const BUDGET: AttemptBudget = { maxBytes: 25_000, maxTokens: 1_000_000 };
const deps = (extra: Partial<CompactionDeps> = {}): CompactionDeps =>
  depsOn(c, { engine: countingEngine(), attemptBudget: BUDGET, ...extra });
const req = (ref: SessionRef, mode: CompactRequest['mode'], holder = 'p6'): CompactRequest => ({ ref, mode, origin: 'manual', holder });

/** Compacts until an attempt is not partial; returns every outcome, with the session's record after each. */
async function untilWhole(ref: SessionRef, mode: CompactRequest['mode']): Promise<CompactionOutcome[]> {
  const outcomes: CompactionOutcome[] = [];
  records = [];
  for (let i = 0; i < 100; i++) {
    const out = await compactSession(deps(), req(ref, mode));
    outcomes.push(out);
    records.push(await c.store.getSession(ref));
    if (out.outcome !== 'compressed' || !out.partial) return outcomes;
  }
  throw new Error('did not converge in 100 attempts');
}
let records: (SessionRecord | null)[] = [];

describe('bounded attempts (P6)', () => {
  it('P6: a session longer than the bound is compacted in place one bounded oldest part per attempt, reported partial, until it fits; every item kept or counted once', async () => {
    const ref = await longSession(c.store, 2_000);
    const original = await c.store.readAll(ref);
    const outcomes = await untilWhole(ref, 'in_place');
    const partials = outcomes.slice(0, -1);
    expect(partials.length).toBeGreaterThanOrEqual(5);
    let count = 2_000;
    for (const [i, out] of partials.entries()) {
      expect(out).toMatchObject({ outcome: 'compressed', mode: 'in_place', partial: true, sessionId: ref.sessionId });
      if (out.outcome !== 'compressed') continue;
      // Bounded: a part is at most the budget plus one row (two 100-turn rows here).
      expect(out.replaced).toBeLessThanOrEqual(202);
      const session = records[i]!;
      expect(session.messageCount).toBeLessThan(count);
      count = session.messageCount;
      expect(out.remainingTokens).toBe(session.tokenEstimate);
    }
    expect(outcomes.at(-1)).toMatchObject({ outcome: 'compressed', mode: 'in_place' });
    expect(outcomes.at(-1)).not.toHaveProperty('partial');
    const after = await c.store.readAll(ref);
    expect(conserved(after)).toBe(original.length);
    expect(after.length).toBeLessThan(10);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });

  it('P6: after a partial attempt the items after the part are exactly the originals, in order, and reads and appends go on', async () => {
    const ref = await longSession(c.store, 1_000);
    const original = await c.store.readAll(ref);
    const out = await compactSession(deps(), req(ref, 'in_place'));
    expect(out).toMatchObject({ outcome: 'compressed', partial: true });
    if (out.outcome !== 'compressed') return;
    const after = await c.store.readAll(ref);
    expect(after.slice(0, out.items.length)).toEqual(out.items);
    expect(after.slice(out.items.length)).toEqual(original.slice(out.replaced));
    expect(conserved(after)).toBe(1_000);
    const tail = await c.store.readTail(ref, 3, 1_000_000);
    expect(tail.items).toEqual(original.slice(-3));
    await appendTo(c.store, ref, [turn(1_000)]);
    expect((await c.store.readAll(ref)).at(-1)).toEqual(turn(1_000));
  });

  it('C10/P6: a rotation of a long session compacts in place first (partial, same session), then rotates once the session fits: one child', async () => {
    const ref = await longSession(c.store, 2_000);
    const outcomes = await untilWhole(ref, 'rotate');
    for (const out of outcomes.slice(0, -1))
      expect(out).toMatchObject({ outcome: 'compressed', mode: 'in_place', partial: true, sessionId: ref.sessionId });
    const last = outcomes.at(-1)!;
    expect(last).toMatchObject({ outcome: 'compressed', mode: 'rotate', previousSessionId: ref.sessionId });
    expect(await c.store.children(ref)).toHaveLength(1);
    const child = { tenantId: ref.tenantId, sessionId: last.sessionId };
    expect(conserved(await c.store.readAll(child))).toBe(2_000);
  });

  it('C7/P6: an engine that returns the part unchanged writes nothing', async () => {
    const ref = await longSession(c.store, 1_000);
    const before = await c.store.getSession(ref);
    const out = await compactSession(
      deps({ engine: testEngine((items) => ({ items: structuredClone([...items]) })) }),
      req(ref, 'in_place'),
    );
    expect(out).toMatchObject({ outcome: 'noop', reason: 'unchanged' });
    const after = await c.store.getSession(ref);
    expect(after?.messageCount).toBe(before?.messageCount);
    expect(after?.generation).toBe(before?.generation);
  });

  it("C8/P6: a partial summary without a real user turn gets the part's last user turn back", async () => {
    const ref = await longSession(c.store, 1_000);
    const engine = testEngine(() => ({ items: [{ role: 'assistant', content: `${SUMMARY_PREFIX} covers=1` }] }));
    const out = await compactSession(deps({ engine }), req(ref, 'in_place'));
    expect(out).toMatchObject({ outcome: 'compressed', partial: true });
    if (out.outcome !== 'compressed') return;
    const part = engine.calls[0]!.items;
    const lastUser = part.findLast((it) => it.role === 'user')!;
    expect(out.items.some((it) => it.role === 'user' && it.content === lastUser.content)).toBe(true);
  });

  it('I4/P6: items appended while a partial attempt runs stay after the kept part', async () => {
    const ref = await longSession(c.store, 1_000);
    const engine = countingEngine();
    const during: Item[] = [turn(5_000), turn(5_001)];
    const summarize = engine.compress.bind(engine);
    engine.compress = async (t, o) => {
      await appendTo(c.store, ref, during);
      return summarize(t, o);
    };
    const out = await compactSession(deps({ engine }), req(ref, 'in_place'));
    expect(out).toMatchObject({ outcome: 'compressed', partial: true });
    const after = await c.store.readAll(ref);
    expect(after.slice(-2)).toEqual(during);
    expect(conserved(after)).toBe(1_002);
  });

  it('A6/P6: a pop while a partial attempt runs makes it stale: nothing written, the popped item never comes back', async () => {
    const ref = await longSession(c.store, 1_000);
    const before = await c.store.getSession(ref);
    const engine = countingEngine();
    const summarize = engine.compress.bind(engine);
    engine.compress = async (t, o) => {
      await c.store.popLast(ref);
      return summarize(t, o);
    };
    const out = await compactSession(deps({ engine }), req(ref, 'in_place'));
    expect(out).toMatchObject({ outcome: 'skipped', reason: 'stale' });
    const after = await c.store.readAll(ref);
    expect(after).toHaveLength(before!.messageCount - 1);
    expect(after.at(-1)).toEqual(turn(998));
  });

  it('E1/E3/P6: a held begin on a long session returns the oldest bounded part marked partial; its commit replaces exactly that part, the rest kept verbatim', async () => {
    const ref = await longSession(c.store, 1_000);
    const original = await c.store.readAll(ref);
    const held = new HeldAttempts({ lease: c.lease, store: c.store, leaseTtlMs: 10_000, attemptBudget: BUDGET });
    const begun = await held.begin(ref, { mode: 'rotate', origin: 'manual' });
    expect(begun.outcome).toBe('started');
    if (begun.outcome !== 'started') return;
    expect(begun.attempt.partial).toBe(true);
    expect(begun.messages.length).toBeLessThanOrEqual(202);
    expect(begun.messages).toEqual(original.slice(0, begun.messages.length));
    expect(begun.attempt.throughSeq).toBe(begun.messages.length);
    // Appended after the begin: carried as it is (I4).
    await appendTo(c.store, ref, [turn(9_000)]);
    const replacement = (await countingEngine().compress({ format: 'chat', items: begun.messages }, {})).items;
    const answer = await held.commit(ref, begun.attempt.attemptId, begun.attempt.leaseToken, replacement);
    expect(answer).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: ref.sessionId, partial: true });
    const after = await c.store.readAll(ref);
    expect(after).toEqual([...replacement, ...original.slice(begun.messages.length), turn(9_000)]);
    expect(await c.store.children(ref)).toHaveLength(0);
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });
});

describe('bounded attempts: round trips (P6)', () => {
  let trips: RoundTrips;
  beforeAll(() => {
    trips = new RoundTrips().watchDynamo(c.ddb).watchRedis(c.redis);
  });
  afterAll(() => trips.restore());

  it('P6: one attempt makes the same sequential calls at 1,000 and 50,000 items (begin ∥ bounded read, the partial commit)', async () => {
    const small = await longSession(c.store, 1_000);
    // 1,000-turn rows here (one append each): the part is one row, the session 50 of them; the calls do not depend on either.
    const large = await longSession(c.store, 50_000, { perAppend: 1_000, bytes: 100 });
    const steps: string[][] = [];
    for (const ref of [small, large]) {
      const { result, phases } = await trips.during(() => compactSession(deps(), req(ref, 'in_place')));
      expect(result).toMatchObject({ outcome: 'compressed', partial: true });
      steps.push(
        phases.dynamo.map((s) =>
          s
            .map((x) => x.op.replace(/Command$/, ''))
            .sort()
            .join(' ∥ '),
        ),
      );
      expect(phases.redisRounds).toBe(3);
    }
    expect(steps[0]).toEqual(['Query ∥ UpdateItem', 'TransactWriteItems']);
    expect(steps[1]).toEqual(steps[0]);
  }, 120_000);
});

describe('deadlines (P6, C9)', () => {
  it('P6/C9: an engine still running when the invocation is down to the commit margin: answered cancelled by then, nothing written, lease free', async () => {
    const ref = await longSession(c.store, 300);
    const before = await c.store.getSession(ref);
    const never = deferred<{ items: Item[] }>();
    const end = Date.now() + 1_500;
    const out = await compactSession(deps({ engine: testEngine(() => never.promise), commitSafetyMarginMs: 1_000 }), {
      ...req(ref, 'in_place'),
      remainingTimeMs: () => end - Date.now(),
    });
    // Answered while the invocation still had its margin (the engine never finished).
    expect(end - Date.now()).toBeGreaterThan(0);
    expect(out).toMatchObject({ outcome: 'cancelled' });
    expect(out.warnings.join(' ')).toMatch(/safety margin/);
    never.resolve({ items: [{ role: 'user', content: 'late' }] });
    const after = await c.store.getSession(ref);
    expect(after?.messageCount).toBe(before?.messageCount);
    expect(after?.attempt).toBeUndefined();
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();
  });
});

describe('after-turn (P6, F3)', () => {
  it('F3/P6: the after-turn consumer keeps compacting a long session one bounded attempt at a time until it is under the threshold, then rotates', async () => {
    const ref = await longSession(c.store, 2_000);
    const engine = countingEngine();
    const consumer = new AfterTurnConsumer({
      store: c.store,
      compact: (r) => compactSession({ ...deps({ engine }) }, r),
      thresholdTokens: 1_000,
      mode: 'rotate',
      persistence: afterTurnPersistence(c.ddb, process.env.TABLE_NAME!),
      idempotencyTtlSeconds: 3600,
    });
    const { records } = await consumer.processBatch(
      [{ messageId: randomUUID(), body: JSON.stringify({ ...ref, origin: 'turn' }) }],
      lambdaContext(600_000),
    );
    expect(records[0]).toMatchObject({ ok: true, result: { status: 'compacted', mode: 'rotate', previousSessionId: ref.sessionId } });
    expect(engine.calls.length).toBeGreaterThanOrEqual(5);
    const children = await c.store.children(ref);
    expect(children).toHaveLength(1);
    const child = { tenantId: ref.tenantId, sessionId: children[0]!.sessionId };
    expect((await c.store.getSession(child))!.tokenEstimate).toBeLessThanOrEqual(1_000);
    expect(conserved(await c.store.readAll(child))).toBe(2_000);
  });
});
