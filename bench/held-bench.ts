// Issue 29: a held attempt (the agent's own engine) against the service engine's compress of the
// same items. Subject: HeldAttempts.begin + commit of the same replacement an instant engine makes
// (the agent's model time is not the service's); baseline: compactSession with that engine. Both
// on fresh sessions of the same transcript, alternated in one run on the same stack. The round
// trips of each are counted too (deterministic).
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Redis } from 'ioredis';
import { compactSession } from '../lib/compaction/index.js';
import { HeldAttempts } from '../lib/compaction/held-attempts.js';
import type { LeaseApi } from '../lib/lease/index.js';
import type { DynamoLineageStore } from '../lib/lineage/dynamo/store.js';
import { seedConversation } from '../test/fixtures/coordinator.js';
import { conversation, fixedEngine, summarizeToTwo } from '../test/fixtures/engines.js';
import { RoundTrips } from '../test/support/round-trips.js';
import { compare, timeIt, type Comparison } from './stats.js';

export interface HeldBenchResult {
  iterations: number;
  items: number;
  /** Held begin + commit (rotate) vs compactSession (rotate) of the same items. */
  rotateHeldVsCompress: Comparison;
  /** The same, in place. */
  inPlaceHeldVsCompress: Comparison;
  /** Sequential steps counted on the real clients: held begin, held commit, and the whole compress. */
  trips: { what: string; dynamoSteps: number; redisRounds: number; detail: string[] }[];
}

export interface HeldBenchDeps {
  lease: LeaseApi;
  store: DynamoLineageStore;
  ddb: DynamoDBClient;
  redis: Redis[];
}

export async function benchHeld(deps: HeldBenchDeps, iterations: number, items = 8): Promise<HeldBenchResult> {
  const held = new HeldAttempts({ lease: deps.lease, store: deps.store });
  const engine = fixedEngine();
  const input = conversation(items);
  const heldRun = async (mode: 'rotate' | 'in_place') => {
    const ref = await seedConversation(deps.store, `bench-held-${randomUUID()}`, input);
    return async () => {
      const b = await held.begin(ref, { mode, origin: 'manual', ttlMs: 10_000 });
      if (b.outcome !== 'started') throw new Error(`bench: expected started, got ${b.outcome}`);
      const r = await held.commit(ref, b.attempt.attemptId, b.attempt.leaseToken, summarizeToTwo(b.messages));
      if (r.outcome !== 'compressed') throw new Error(`bench: expected compressed, got ${String(r.outcome)}`);
    };
  };
  const compressRun = async (mode: 'rotate' | 'in_place') => {
    const ref = await seedConversation(deps.store, `bench-held-${randomUUID()}`, input);
    return async () => {
      const r = await compactSession(
        { lease: deps.lease, store: deps.store, engine, leaseTtlMs: 10_000 },
        { ref, mode, origin: 'manual', holder: 'bench' },
      );
      if (r.outcome !== 'compressed') throw new Error(`bench: expected compressed, got ${r.outcome}`);
    };
  };
  const warmup = 5;
  const out = { rotate: { s: [] as number[], b: [] as number[] }, in_place: { s: [] as number[], b: [] as number[] } };
  for (const mode of ['rotate', 'in_place'] as const) {
    for (let i = 0; i < iterations + warmup; i++) {
      const [subject, baseline] = [await heldRun(mode), await compressRun(mode)];
      // Alternate which goes first, so both see the same machine.
      const [ts, tb] =
        i % 2 === 0 ? [await timeIt(subject), await timeIt(baseline)] : [await timeIt(baseline), await timeIt(subject)].reverse();
      if (i >= warmup) {
        out[mode].s.push(ts!);
        out[mode].b.push(tb!);
      }
    }
  }
  return {
    iterations,
    items,
    rotateHeldVsCompress: compare(out.rotate.s, out.rotate.b),
    inPlaceHeldVsCompress: compare(out.in_place.s, out.in_place.b),
    trips: await countTrips(deps, held, input),
  };
}

async function countTrips(deps: HeldBenchDeps, held: HeldAttempts, input: ReturnType<typeof conversation>) {
  const trips = new RoundTrips().watchDynamo(deps.ddb).watchRedis(deps.redis);
  const rows: HeldBenchResult['trips'] = [];
  const row = (what: string, p: { dynamoSteps: number; redisRounds: number; detail: string[] }) =>
    rows.push({ what, dynamoSteps: p.dynamoSteps, redisRounds: p.redisRounds, detail: p.detail });
  try {
    const ref = await seedConversation(deps.store, `bench-held-trips-${randomUUID()}`, input);
    const begun = await trips.during(() => held.begin(ref, { mode: 'rotate', origin: 'manual', ttlMs: 10_000 }));
    row('held begin (rotate)', begun.phases);
    const b = begun.result;
    if (b.outcome !== 'started') throw new Error('bench: expected started');
    const committed = await trips.during(() =>
      held.commit(ref, b.attempt.attemptId, b.attempt.leaseToken, summarizeToTwo(b.messages as never)),
    );
    row('held commit (rotate)', committed.phases);
    const other = await seedConversation(deps.store, `bench-held-trips-${randomUUID()}`, input);
    const compress = await trips.during(() =>
      compactSession(
        { lease: deps.lease, store: deps.store, engine: fixedEngine(), leaseTtlMs: 10_000 },
        { ref: other, mode: 'rotate', origin: 'manual', holder: 'trips' },
      ),
    );
    row('compress (rotate)', compress.phases);
    return rows;
  } finally {
    trips.restore();
  }
}
