// Round trips per operation, counted (never timed) with a DynamoDB client middleware and a
// Redis command hook on the real clients (SPEC P1, P2, P3). A change that adds a trip fails here.
// The compacting container knows the session's record (it seeded it) unless a test says cold.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactSession } from '../../../lib/compaction/index.js';
import type { Item } from '../../../lib/items/types.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { overlap, RoundTrips, type Call, type Phases } from '../../support/round-trips.js';
import {
  appendTo,
  contendersForSuite,
  deferred,
  depsOn,
  seedSession,
  testEngine,
  type Contender,
} from '../../support/compaction-fixtures.js';

const [c, holder, cold] = contendersForSuite(3) as [Contender, Contender, Contender];
let trips: RoundTrips;
beforeAll(() => {
  trips = new RoundTrips().watchDynamo(c.ddb).watchRedis(c.redis).watchDynamo(cold.ddb).watchRedis(cold.redis);
});
afterAll(() => trips.restore());

const turns = (n: number): Item[] => Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i}` }));
/** Each sequential DynamoDB step as "A ∥ B" (names sorted: calls of one step have no order). */
const ops = (g: Phases['dynamo']) =>
  g.map((step) =>
    step
      .map((c) => c.op.replace(/Command$/, ''))
      .sort()
      .join(' ∥ '),
  );
// redlock runs its token-checked scripts with EVAL until the script is cached, EVALSHA after.
const rounds = (phases: Phases) => phases.redis.map((r) => r.map((c) => (c.op === 'evalsha' ? 'eval' : c.op)).join(','));
const first = (g: readonly Call[]) => Math.min(...g.map((c) => c.start));
const callOf = (step: readonly Call[] | undefined, op: string): Call => step!.find((c) => c.op === `${op}Command`)!;

/**
 * P1's critical path in a container that knows the session's record: the acquire round; the begin
 * with the transcript read beside it (one DynamoDB step); the L6 ownership check, started once the
 * begin answered (the fence is issued) and before anything else, beside what is left of the read;
 * the commit transaction; the release round. Returns whether the ownership round ran beside the read.
 */
function expectWarmAttempt(phases: Phases, calls: readonly Call[]): { besideRead: boolean } {
  expect(ops(phases.dynamo)).toEqual(['Query ∥ UpdateItem', 'TransactWriteItems']);
  expect(rounds(phases)).toEqual(['set,set,set', 'eval,eval,eval', 'eval,eval,eval']);
  const [acquire, ownership, release] = phases.redis as [Call[], Call[], Call[]];
  const [step, commit] = phases.dynamo as [Call[], Call[]];
  const begin = callOf(step, 'UpdateItem');
  const read = callOf(step, 'Query');
  expect(overlap(acquire, [begin]) || first(acquire) < begin.start).toBe(true);
  // L6: the check starts when the fence is issued: after the begin answered, with nothing started in between.
  expect(first(ownership)).toBeGreaterThan(begin.end);
  expect(calls.filter((x) => x.start > begin.end && x.start < first(ownership))).toEqual([]);
  // ... beside whatever is left of the read, and done before the commit (the engine runs in between).
  if (read.end > begin.end) expect(overlap(ownership, [read])).toBe(true);
  expect(first(ownership)).toBeLessThan(commit[0]!.start);
  expect(overlap(release, commit)).toBe(false);
  expect(phases.dynamoSteps).toBe(2);
  return { besideRead: overlap(ownership, [read]) };
}

const summary = (): { items: Item[] } => ({
  items: [
    { role: 'assistant', content: '[CONTEXT COMPACTION] summary' },
    { role: 'user', content: 'last' },
  ],
});

/**
 * Holds the answer of the snapshot read on `c` until the begin has answered and the next Redis
 * command went out: a read that outlasts the begin (a long transcript, a slower partition),
 * forced by hooks instead of a sleep.
 */
function readOutlastsBegin(c: Contender): () => void {
  const name = `read-outlasts-begin-${Math.random().toString(36).slice(2)}`;
  const redisAfterBegin = deferred();
  let begun = false;
  const node = c.redis[0]!;
  const send = node.sendCommand.bind(node);
  node.sendCommand = (...args: Parameters<typeof send>) => {
    if (begun) redisAfterBegin.resolve();
    return send(...args);
  };
  c.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      if (context.commandName === 'UpdateItemCommand') begun = true;
      if (context.commandName === 'QueryCommand') await redisAfterBegin.promise;
      return out;
    },
    // Inside the counting middleware (step initialize), so the read's counted end is after the hold.
    { step: 'build', name },
  );
  return () => {
    c.ddb.middlewareStack.remove(name);
    node.sendCommand = send;
  };
}

describe('round trips (P1-P3)', () => {
  it('P1: a warm rotation is 2 sequential DynamoDB calls (begin ∥ snapshot read, then the commit) and 3 Redis rounds, the ownership check from the fence on', async () => {
    const ref = await seedSession(c.store, turns(10));
    const { result, phases, calls } = await trips.during(() =>
      compactSession(depsOn(c, { engine: testEngine(summary) }), { ref, mode: 'rotate', origin: 'turn', holder: 'p1' }),
    );
    expect(result.outcome).toBe('compressed');
    expectWarmAttempt(phases, calls);
  });

  it('P1: when the snapshot read outlasts the begin, the ownership check runs beside it: 2 Redis rounds on the critical path (acquire, release)', async () => {
    const ref = await seedSession(c.store, turns(10));
    const remove = readOutlastsBegin(c);
    try {
      const { result, phases, calls } = await trips.during(() =>
        compactSession(depsOn(c, { engine: testEngine(summary) }), { ref, mode: 'rotate', origin: 'turn', holder: 'p1-long-read' }),
      );
      expect(result.outcome).toBe('compressed');
      expect(expectWarmAttempt(phases, calls).besideRead).toBe(true);
      expect(phases.redisRounds - 1).toBe(2);
    } finally {
      remove();
    }
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
      expect.stringMatching(/^(UpdateItem|Query)Command$/),
      expect.stringMatching(/^(UpdateItem|Query)Command$/),
      'TransactWriteItemsCommand',
    ]);
  });

  it('P1: a cold container (the record unknown) is 3 sequential DynamoDB calls: begin, then the read with the ownership check beside it, then the commit', async () => {
    const ref = await seedSession(c.store, turns(10));
    const { result, phases } = await trips.during(() =>
      compactSession(depsOn(cold, { engine: testEngine(summary) }), { ref, mode: 'rotate', origin: 'turn', holder: 'p1-cold' }),
    );
    expect(result.outcome).toBe('compressed');
    expect(ops(phases.dynamo)).toEqual(['UpdateItem', 'Query', 'TransactWriteItems']);
    expect(rounds(phases)).toEqual(['set,set,set', 'eval,eval,eval', 'eval,eval,eval']);
    const [, ownership] = phases.redis as [Call[], Call[]];
    expect(overlap(ownership, phases.dynamo[1]!)).toBe(true);
    expect(phases.redisRounds - 1).toBe(2);
  });

  it('P1: a stale record (another container appended since) costs the read again after the begin: 3 sequential calls, and the new item is in the snapshot', async () => {
    const ref = await seedSession(c.store, turns(10));
    await appendTo(holder.store, ref, [{ role: 'user', content: 'from elsewhere' }]);
    const engine = testEngine(summary);
    const { result, calls } = await trips.during(() =>
      compactSession(depsOn(c, { engine }), { ref, mode: 'in_place', origin: 'turn', holder: 'p1-stale' }),
    );
    expect(result.outcome).toBe('compressed');
    // The read sent beside the begin is left unused (it may still be on its way when the new one goes out).
    const dynamo = calls.filter((x) => x.kind === 'dynamodb');
    expect(dynamo.map((x) => x.op.replace(/Command$/, '')).sort()).toEqual(['Query', 'Query', 'TransactWriteItems', 'UpdateItem']);
    const [begin, reread, commit] = ['UpdateItem', 'Query', 'TransactWriteItems'].map((op) =>
      dynamo.findLast((x) => x.op === `${op}Command`)!,
    );
    expect(reread!.start).toBeGreaterThan(begin!.end);
    expect(commit!.start).toBeGreaterThan(reread!.end);
    expect(engine.calls[0]!.items).toEqual([...turns(10), { role: 'user', content: 'from elsewhere' }]);
  });

  it.each([10, 1000])('P3: an in-place compaction of %i items costs the same sequential calls (archiving is off the path)', async (n) => {
    const ref = await seedSession(c.store, turns(n));
    const { result, phases, calls } = await trips.during(() =>
      compactSession(depsOn(c, { engine: testEngine(summary) }), { ref, mode: 'in_place', origin: 'turn', holder: `p3-${n}` }),
    );
    expect(result.outcome).toBe('compressed');
    expectWarmAttempt(phases, calls);
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
