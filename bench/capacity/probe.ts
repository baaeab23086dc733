// One instrumented runtime: the service's own composition root (lib/runtime.ts) on a table of
// its own, its DynamoDB client priced by the CapacityMeter and its Redis clients counted by
// test/support/round-trips.ts. `measure` runs one operation and returns what it cost.
import type { Redis } from 'ioredis';
import { ensureTable } from '../../infra/table.js';
import { createDynamoClient } from '../../lib/aws-clients.js';
import { httpDeps, Runtime, type Core } from '../../lib/runtime.js';
import type { ApiDeps } from '../../lib/api/http-app.js';
import { phasesOf, RoundTrips, type Call } from '../../test/support/round-trips.js';
import { load, type Charge } from './capacity-rules.js';
import { familiesOf, familyOf, type FamilyUse, type PartitionUse, type ShardSettings } from './key-families.js';
import { background, CapacityMeter, type MeteredCall } from './meter.js';
import { tableModel } from './table-model.js';

export interface PhaseCost {
  calls: number;
  /** DynamoDB calls one after another (overlapping calls count once). */
  steps: number;
  ops: Record<string, number>;
  wcu: number;
  rcu: number;
  bytesWritten: number;
  bytesRead: number;
  itemsRead: number;
  failedCalls: number;
}

export type { FamilyUse, PartitionUse } from './key-families.js';

export interface OperationCost {
  name: string;
  answer: PhaseCost;
  /** Work the operation left running after it answered (archive, purge). */
  background?: PhaseCost;
  redis: { rounds: number; perNode: Record<string, number>[] };
  /** Answer and background together, by partition; hottest first. */
  partitions: PartitionUse[];
  /** The same, by key design. */
  families: FamilyUse[];
}

export interface Probe {
  rt: Runtime;
  core: Core;
  http: ApiDeps;
  tableName: string;
  measure(name: string, run: () => Promise<unknown>): Promise<OperationCost>;
  close(): Promise<void>;
}

export interface ProbeOptions {
  /** Environment of the runtime: endpoints, credentials, shard settings. */
  env: Record<string, string>;
  tableName: string;
  endpoint: string;
}

export async function startProbe(opts: ProbeOptions): Promise<Probe> {
  const shadow = createDynamoClient({ endpoint: opts.endpoint, maxAttempts: 3 });
  await ensureTable(shadow, opts.tableName);
  const rt = new Runtime({ env: { ...opts.env, TABLE_NAME: opts.tableName } });
  const core = await rt.core();
  const http = await httpDeps(rt);
  const model = tableModel();
  const meter = new CapacityMeter(model, shadow, opts.tableName);
  const unwatch = meter.watch(core.dynamo);
  const trips = new RoundTrips().watchRedis(core.redis);
  // Work the store defers past the answer (archive, purge) is priced as the operation's background part.
  const runTask = core.store.runTask.bind(core.store);
  core.store.runTask = (task) => background.run(true, () => runTask(task));
  const shards: ShardSettings = { attemptShards: core.config.attemptShards, rotationShards: core.config.rotationShards };
  return {
    rt,
    core,
    http,
    tableName: opts.tableName,
    async measure(name, run) {
      meter.start();
      let redisCalls: Call[];
      try {
        ({ calls: redisCalls } = await trips.during(run));
        await meter.idle();
      } finally {
        meter.stop();
      }
      return costOf(name, meter.calls, redisCalls, core.redis, shards);
    },
    async close() {
      unwatch();
      trips.restore();
      await rt.close();
      shadow.destroy();
    },
  };
}

function phaseOf(calls: readonly MeteredCall[]): PhaseCost {
  const charges = calls.flatMap((c) => c.charges);
  const ops: Record<string, number> = {};
  for (const c of calls) ops[c.op] = (ops[c.op] ?? 0) + 1;
  return {
    calls: calls.length,
    steps: phasesOf(calls).dynamoSteps,
    ops,
    wcu: sum(charges, (c) => c.wcu),
    rcu: sum(charges, (c) => c.rcu),
    bytesWritten: sum(
      charges.filter((c) => c.wcu > 0 && c.target === 'table'),
      (c) => c.bytes,
    ),
    bytesRead: sum(
      charges.filter((c) => c.rcu > 0),
      (c) => c.bytes,
    ),
    itemsRead: sum(calls, (c) => c.itemsRead),
    failedCalls: calls.filter((c) => c.failed).length,
  };
}

function costOf(
  name: string,
  calls: readonly MeteredCall[],
  redisCalls: readonly Call[],
  nodes: readonly Redis[],
  shards: ShardSettings,
): OperationCost {
  const answer = calls.filter((c) => !c.background);
  const later = calls.filter((c) => c.background);
  const perNode = nodes.map((_n, i) => {
    const counts: Record<string, number> = {};
    // redlock sends EVAL until its script is cached, EVALSHA after: one command either way.
    for (const c of redisCalls.filter((r) => r.node === i))
      counts[c.op === 'evalsha' ? 'eval' : c.op] = (counts[c.op === 'evalsha' ? 'eval' : c.op] ?? 0) + 1;
    return counts;
  });
  const partitions = byPartition(
    calls.flatMap((c) => c.charges),
    shards,
  );
  return {
    name,
    answer: phaseOf(answer),
    ...(later.length ? { background: phaseOf(later) } : {}),
    redis: { rounds: phasesOf(redisCalls).redisRounds, perNode },
    partitions,
    families: familiesOf(partitions),
  };
}

function byPartition(charges: readonly Charge[], shards: ShardSettings): PartitionUse[] {
  const uses = new Map<string, PartitionUse>();
  for (const c of charges) {
    const id = `${c.target}\u0000${c.partition}`;
    const u = uses.get(id) ?? {
      target: c.target,
      partition: c.partition,
      family: familyOf(c.target, c.partition, shards).name,
      wcu: 0,
      rcu: 0,
    };
    u.wcu += c.wcu;
    u.rcu += c.rcu;
    uses.set(id, u);
  }
  return [...uses.values()].sort((a, b) => load(b) - load(a));
}

function sum<T>(xs: readonly T[], f: (x: T) => number): number {
  return xs.reduce((s, x) => s + f(x), 0);
}
