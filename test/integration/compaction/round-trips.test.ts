// Round trips per operation, counted (never timed) with a DynamoDB client middleware and a
// Redis command hook on the real clients (SPEC P1, P2, P3). A change that adds a trip fails here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactSession } from '../../../lib/compaction/index.js';
import type { Item } from '../../../lib/items/types.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { overlap, RoundTrips, type Phases } from '../../support/round-trips.js';
import { contendersForSuite, depsOn, seedSession, testEngine, type Contender } from '../../support/compaction-fixtures.js';

const [c, holder] = contendersForSuite(2) as [Contender, Contender];
let trips: RoundTrips;
beforeAll(() => {
  trips = new RoundTrips().watchDynamo(c.ddb).watchRedis(c.redis);
});
afterAll(() => trips.restore());

const turns = (n: number): Item[] => Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i}` }));
const ops = (g: Phases['dynamo']) => g.map((step) => step.map((c) => c.op.replace(/Command$/, '')).join(' ∥ '));

/**
 * P1's critical path: acquire round, begin, the transcript read with the ownership check running
 * beside it (not after it), the commit transaction, release round.
 */
function expectLeanAttempt(phases: Phases): void {
  expect(ops(phases.dynamo)).toEqual(['UpdateItem', 'Query', 'TransactWriteItems']);
  // redlock runs its token-checked scripts with EVAL until the script is cached, EVALSHA after.
  const script = (op: string) => (op === 'evalsha' ? 'eval' : op);
  expect(phases.redis.map((r) => r.map((c) => script(c.op)).join(','))).toEqual(['set,set,set', 'eval,eval,eval', 'eval,eval,eval']);
  const [acquire, ownership, release] = phases.redis as [Phases['redis'][0], Phases['redis'][0], Phases['redis'][0]];
  const [begin, read, commit] = phases.dynamo as [Phases['dynamo'][0], Phases['dynamo'][0], Phases['dynamo'][0]];
  expect(overlap(ownership, read)).toBe(true);
  expect(overlap(acquire, begin) || acquire[0]!.start < begin[0]!.start).toBe(true);
  expect(overlap(release, commit)).toBe(false);
  // So on the critical path: 2 Redis rounds (acquire, release) and 3 sequential DynamoDB calls.
  expect(phases.redisRounds - 1).toBe(2);
  expect(phases.dynamoSteps).toBe(3);
}

const summary = (): { items: Item[] } => ({
  items: [
    { role: 'assistant', content: '[CONTEXT COMPACTION] summary' },
    { role: 'user', content: 'last' },
  ],
});

describe('round trips (P1-P3)', () => {
  it('P1: a rotation costs 2 Redis rounds and 3 sequential DynamoDB calls: begin, read (ownership check beside it), commit', async () => {
    const ref = await seedSession(c.store, turns(10));
    const { result, phases } = await trips.during(() =>
      compactSession(depsOn(c, { engine: testEngine(summary) }), { ref, mode: 'rotate', origin: 'turn', holder: 'p1' }),
    );
    expect(result.outcome).toBe('compressed');
    expectLeanAttempt(phases);
  });

  it("P1: the rotation transaction carries the child's items when they fit (no separate BatchWrite)", async () => {
    const ref = await seedSession(c.store, turns(40));
    const { calls } = await trips.during(() =>
      compactSession(depsOn(c, { engine: testEngine((items) => ({ items: [summary().items[0]!, ...items.slice(-30)] })) }), {
        ref,
        mode: 'rotate',
        origin: 'turn',
        holder: 'p1-items',
      }),
    );
    expect(calls.filter((x) => x.kind === 'dynamodb').map((x) => x.op)).toEqual([
      'UpdateItemCommand',
      'QueryCommand',
      'TransactWriteItemsCommand',
    ]);
  });

  it.each([10, 1000])('P3: an in-place compaction of %i items costs the same sequential calls (archiving is off the path)', async (n) => {
    const ref = await seedSession(c.store, turns(n));
    const { result, phases } = await trips.during(() =>
      compactSession(depsOn(c, { engine: testEngine(summary) }), { ref, mode: 'in_place', origin: 'turn', holder: `p3-${n}` }),
    );
    expect(result.outcome).toBe('compressed');
    expectLeanAttempt(phases);
  });

  it('P2: a losing caller is answered in one Redis round (SET NX PX GET on each node) and no DynamoDB call', async () => {
    const ref = await seedSession(c.store, turns(1000));
    const held = await holder.lease.tryAcquire(sessionKey(ref), { ttlMs: 10_000, holder: 'winner' });
    expect(held.acquired).toBe(true);
    try {
      const engine = testEngine();
      const { result, calls, phases } = await trips.during(() =>
        compactSession(depsOn(c, { engine }), { ref, mode: 'rotate', origin: 'turn', holder: 'loser' }),
      );
      expect(result).toMatchObject({ outcome: 'skipped', reason: 'locked' });
      expect(calls.map((x) => `${x.kind}:${x.op}`)).toEqual(['redis:set', 'redis:set', 'redis:set']);
      expect(phases).toMatchObject({ redisRounds: 1, dynamoSteps: 0 });
      expect(engine.calls).toHaveLength(0);
    } finally {
      if (held.acquired) await holder.lease.release(held);
    }
  });
});
