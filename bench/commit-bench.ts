// SPEC P1/P3: a whole coordinated compaction (lease, begin beside the snapshot read, the ownership
// check, commit, release; an instant engine) vs one bare TransactWriteItems of the same items it commits
// (the parent's update, the child's record or the archive task, the compacted items), interleaved
// in one run on the same DynamoDB Local. Also counts the sequential calls (deterministic).
import { randomUUID } from 'node:crypto';
import {
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type DynamoDBClient,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { compactSession } from '../lib/compaction/index.js';
import type { Item } from '../lib/items/types.js';
import type { LeaseApi } from '../lib/lease/index.js';
import { sessionPk } from '../lib/lineage/dynamo/keys.js';
import type { DynamoLineageStore } from '../lib/lineage/dynamo/store.js';
import type { SessionRef } from '../lib/session-ref.js';
import type { Redis } from 'ioredis';
import { seedConversation } from '../test/fixtures/coordinator.js';
import { conversation, fixedEngine, summarizeToTwo } from '../test/fixtures/engines.js';
import { overlap, RoundTrips } from '../test/support/round-trips.js';
import { compare, timeIt, type Comparison } from './stats.js';

export interface CommitBenchResult {
  iterations: number;
  /** compactSession rotate vs a bare transaction writing the same parent update, child record and items. */
  rotationVsBareTransaction: Comparison;
  /** compactSession in place vs a bare transaction writing the same record update, archive task and items. */
  inPlaceVsBareTransaction: Comparison;
  /**
   * P1 against its real floor (issue 34): compactSession rotate vs the same calls sent bare in the same
   * order: the acquire round, UpdateItem beside the transcript Query, the ownership round after the
   * update, the TransactWriteItems, the release round.
   */
  rotationVsBareCalls?: Comparison;
  /** Sequential steps counted on the real clients (P1, P3). */
  trips: { mode: 'rotate' | 'in_place'; items: number; dynamoSteps: number; redisRounds: number; detail: string[] }[];
}

export interface CommitBenchDeps {
  lease: LeaseApi;
  store: DynamoLineageStore;
  ddb: DynamoDBClient;
  redis: Redis[];
  tableName: string;
}

/** The transaction a compaction of `input` commits, written bare under keys of its own. */
function bareTransaction(tableName: string, mode: 'rotate' | 'in_place', input: readonly Item[]): TransactWriteItem[] {
  const pk = (id: string) => `BENCH#${id}`;
  const parent = randomUUID();
  const child = randomUUID();
  const now = new Date().toISOString();
  const compacted = summarizeToTwo(input);
  const target = mode === 'rotate' ? child : parent;
  const items: TransactWriteItem[] = compacted.map((it, i) => ({
    Put: {
      TableName: tableName,
      Item: marshall({
        pk: pk(target),
        sk: `MSG#${String(1).padStart(10, '0')}#${String(i + 1).padStart(10, '0')}`,
        body: JSON.stringify(it),
        tokens: 5,
        generation: 1,
        seq: i + 1,
      }),
    },
  }));
  const update: TransactWriteItem = {
    Update: {
      TableName: tableName,
      Key: marshall({ pk: pk(parent), sk: 'META' }),
      UpdateExpression: 'SET #e = :now, #c = :child, #l = :mark ADD #v :one',
      ConditionExpression: 'attribute_not_exists(#e) AND attribute_not_exists(#c)',
      ExpressionAttributeNames: { '#e': 'endedAt', '#c': 'childSessionId', '#l': 'lastActivity', '#v': 'version' },
      ExpressionAttributeValues: marshall({ ':now': now, ':child': child, ':mark': { label: 'compaction completed', at: now }, ':one': 1 }),
    },
  };
  const second: TransactWriteItem =
    mode === 'rotate'
      ? {
          Put: {
            TableName: tableName,
            Item: marshall({ pk: pk(child), sk: 'META', createdAt: now, parentKey: pk(parent), version: 1 }),
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        }
      : {
          Put: { TableName: tableName, Item: marshall({ pk: pk(parent), sk: 'TASK#archive#0000000000', kind: 'archive', generation: 0 }) },
        };
  return [update, second, ...items];
}

/** The calls of one rotation, bare and in the same order: what no coordination can go under. */
function bareCalls(deps: CommitBenchDeps, ref: SessionRef, tx: TransactWriteItem[]): () => Promise<void> {
  return async () => {
    const key = `bench:floor:${randomUUID()}`;
    const nodes = deps.redis;
    await Promise.all(nodes.map((c) => c.set(key, 'floor', 'PX', 10_000, 'NX')));
    const update = deps.ddb.send(
      new UpdateItemCommand({
        TableName: deps.tableName,
        Key: marshall({ pk: `BENCH#${randomUUID()}`, sk: 'META' }),
        UpdateExpression: 'SET #a = :a ADD #f :one',
        ExpressionAttributeNames: { '#a': 'attempt', '#f': 'fence' },
        ExpressionAttributeValues: marshall({ ':a': { holder: 'floor' }, ':one': 1 }),
      }),
    );
    const read = deps.ddb.send(
      new QueryCommand({
        TableName: deps.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :msg)',
        ExpressionAttributeValues: marshall({ ':pk': sessionPk(ref), ':msg': 'MSG#' }),
      }),
    );
    await Promise.all([update.then(() => Promise.all(nodes.map((c) => c.pexpire(key, 10_000)))), read]);
    await deps.ddb.send(new TransactWriteItemsCommand({ TransactItems: tx }));
    await Promise.all(nodes.map((c) => c.del(key)));
  };
}

export async function benchCommit(deps: CommitBenchDeps, iterations: number): Promise<CommitBenchResult> {
  const engine = fixedEngine();
  const out: Record<'rotate' | 'in_place', { s: number[]; b: number[] }> = { rotate: { s: [], b: [] }, in_place: { s: [], b: [] } };
  const floor = { s: [] as number[], b: [] as number[] };
  const warmup = 10;
  const input = conversation(8);
  for (const mode of ['rotate', 'in_place'] as const) {
    for (let i = 0; i < iterations + warmup; i++) {
      const ref = await seedConversation(deps.store, `bench-${randomUUID()}`, input);
      const tx = bareTransaction(deps.tableName, mode, input);
      const subject = async () => {
        const r = await compactSession(
          { lease: deps.lease, store: deps.store, engine, leaseTtlMs: 10_000 },
          { ref, mode, origin: 'manual', holder: 'bench' },
        );
        if (r.outcome !== 'compressed') throw new Error(`bench: expected compressed, got ${r.outcome}`);
      };
      const bare = () => deps.ddb.send(new TransactWriteItemsCommand({ TransactItems: tx }));
      // Alternate which goes first, so both see the same machine.
      const [ts, tb] = i % 2 === 0 ? [await timeIt(subject), await timeIt(bare)] : [await timeIt(bare), await timeIt(subject)].reverse();
      if (i >= warmup) {
        out[mode].s.push(ts!);
        out[mode].b.push(tb!);
      }
      if (mode === 'rotate') {
        // The same rotation again on a fresh session, interleaved with its bare calls.
        const ref2 = await seedConversation(deps.store, `bench-${randomUUID()}`, input);
        const subject2 = async () => {
          const r = await compactSession(
            { lease: deps.lease, store: deps.store, engine, leaseTtlMs: 10_000 },
            { ref: ref2, mode, origin: 'manual', holder: 'bench' },
          );
          if (r.outcome !== 'compressed') throw new Error(`bench: expected compressed, got ${r.outcome}`);
        };
        const calls = bareCalls(deps, ref2, bareTransaction(deps.tableName, mode, input));
        const [fs, fb] =
          i % 2 === 0 ? [await timeIt(subject2), await timeIt(calls)] : [await timeIt(calls), await timeIt(subject2)].reverse();
        if (i >= warmup) {
          floor.s.push(fs!);
          floor.b.push(fb!);
        }
      }
    }
  }
  return {
    iterations,
    rotationVsBareTransaction: compare(out.rotate.s, out.rotate.b),
    inPlaceVsBareTransaction: compare(out.in_place.s, out.in_place.b),
    rotationVsBareCalls: compare(floor.s, floor.b),
    trips: await countTrips(deps, engine),
  };
}

/** P1/P3 counted: rotation, and in place at 10 and 1,000 items. */
async function countTrips(deps: CommitBenchDeps, engine: ReturnType<typeof fixedEngine>): Promise<CommitBenchResult['trips']> {
  const trips = new RoundTrips().watchDynamo(deps.ddb).watchRedis(deps.redis);
  try {
    const rows: CommitBenchResult['trips'] = [];
    for (const [mode, n] of [
      ['rotate', 10],
      ['in_place', 10],
      ['in_place', 1000],
    ] as const) {
      const ref = await seedConversation(deps.store, `bench-trips-${randomUUID()}`, conversation(n));
      const { result, phases } = await trips.during(() =>
        compactSession(
          { lease: deps.lease, store: deps.store, engine, leaseTtlMs: 10_000 },
          { ref, mode, origin: 'manual', holder: 'trips' },
        ),
      );
      if (result.outcome !== 'compressed') throw new Error(`bench: expected compressed, got ${result.outcome}`);
      // P1: the ownership check (the second Redis round) is off the critical path when it ran beside the
      // transcript read; a read that answered before the begin leaves it a round of its own.
      const read = phases.dynamo.flat().filter((c) => c.op === 'QueryCommand');
      const besideRead = phases.redis[1] && overlap(phases.redis[1], read) ? 1 : 0;
      rows.push({ mode, items: n, dynamoSteps: phases.dynamoSteps, redisRounds: phases.redisRounds - besideRead, detail: phases.detail });
    }
    return rows;
  } finally {
    trips.restore();
  }
}
