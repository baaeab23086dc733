// `npm run bench -- capacity`: prices every operation (counted calls, computed WCU/RCU, Redis
// commands per node), derives the ceilings of each key design, one hot session's ceilings and
// the cost per 1,000 operations, runs the timed scaling run, and writes bench/CAPACITY.md.
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { stackEnv, type LocalStack } from '../../infra/local/stack.js';
import { loadConfig } from '../../lib/config.js';
import { encodeItems, packRows, rowItems } from '../../lib/lineage/dynamo/rows.js';
import { SHARD_QUERY_CONCURRENCY } from '../../lib/lineage/dynamo/keys.js';
import { FORK_AUDIT_OVERLAP_MS, type SweepResult } from '../../lib/sweep/run-sweep.js';
import { round } from '../stats.js';
import { deriveModel, TARGETS, withRefreshes, type Model } from './ceilings.js';
import { compactionLengths, type CompactionLength } from './compaction-length.js';
import { chatItems } from './fixtures.js';
import { itemSize } from './item-size.js';
import { measureSessionOps, REFRESH_OP, type MeasuredOperation, type Proof } from './operations.js';
import { PRICES, TABLE_QUOTA } from './prices.js';
import { startProbe } from './probe.js';
import { writeCapacity } from './report.js';
import { runScaling, type ScalingResult } from './scaling.js';
import { measureSweeps } from './sweep-ops.js';
import { marshall } from '@aws-sdk/util-dynamodb';

export interface CapacityResults {
  startedAt: string;
  durationSeconds?: number;
  node: string;
  cpus: number;
  loadAverage: number[];
  settings: {
    attemptShards: number;
    rotationShards: number;
    apiKeyCacheTtlSeconds: number;
    shardQueryConcurrency: number;
    forkAuditOverlapMinutes: number;
    sweepSchedule: string;
    itemTextChars: number;
    typicalItemBytes: number;
  };
  targets: typeof TARGETS;
  prices: typeof PRICES;
  tableQuota: typeof TABLE_QUOTA;
  compactionLengths: CompactionLength[];
  operations: MeasuredOperation[];
  proofs: Proof[];
  model: Model;
  sweeps: Record<string, SweepResult>;
  scaling?: ScalingResult;
}

export interface CapacityOptions {
  stack: LocalStack;
  /** Sessions per concurrency level of the scaling run (0 skips it). */
  scalingSessions: number;
  concurrencies?: readonly number[];
  step?: (what: string) => void;
}

const root = fileURLToPath(new URL('../..', import.meta.url));

export async function benchCapacity(opts: CapacityOptions): Promise<CapacityResults> {
  const started = Date.now();
  const step = opts.step ?? (() => undefined);
  // The service's own logs (info per after-turn record) would drown the bench's output.
  process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
  const env = stackEnv(opts.stack);
  const base = { env, endpoint: opts.stack.dynamodbEndpoint };
  const config = loadConfig(env);
  const loadAverage = loadavg().map((x) => round(x, 2));

  step('capacity: operations');
  const probe = await startProbe({ ...base, tableName: `capacity-ops-${started}` });
  let measured: Awaited<ReturnType<typeof measureSessionOps>>;
  try {
    measured = await measureSessionOps(probe);
  } finally {
    await probe.close();
  }
  step('capacity: sweeps');
  const sweeps = await measureSweeps(base);

  const lengths = compactionLengths();
  const longest = [...lengths].sort((a, b) => b.maxRefreshes - a.maxRefreshes)[0]!;
  const refresh = measured.operations.find((o) => o.name === REFRESH_OP)!;
  const derived = measured.operations
    .filter((o) => o.counts === 'compaction' && longest.maxRefreshes > 0)
    .map((o) => withRefreshes(o, refresh, longest.maxRefreshes, `the most an ${longest.fn} invocation allows`));
  const operations = [...measured.operations, ...derived, ...sweeps.operations];
  const shards = { attemptShards: config.attemptShards, rotationShards: config.rotationShards };
  const model = deriveModel(operations, measured.proofs, shards);

  let scaling: ScalingResult | undefined;
  if (opts.scalingSessions > 0) {
    step(`capacity: scaling run (${opts.scalingSessions} sessions per level)`);
    const pidOf = (prefix: string) => opts.stack.processes.filter((p) => p.name.startsWith(prefix)).map((p) => p.pid);
    const [dynamoPid] = pidOf('dynamodb:');
    if (dynamoPid === undefined) throw new Error('the scaling run needs the DynamoDB Local process this bench started');
    scaling = await runScaling({
      ...base,
      concurrencies: opts.concurrencies ?? [8, 16, 32, 64],
      sessions: opts.scalingSessions,
      itemsPerSession: 12,
      dynamoPid,
      redisPids: pidOf('redis'),
    });
  }

  const typical = rowItems('T#tenant#S#00000000-0000-0000-0000-000000000000', 0, 1, packRows(encodeItems(chatItems(1), [100]))).heads[0]!;
  const results: CapacityResults = {
    startedAt: new Date(started).toISOString(),
    node: process.version,
    cpus: cpus().length,
    loadAverage,
    settings: {
      ...shards,
      apiKeyCacheTtlSeconds: config.apiKeyCacheTtlSeconds,
      shardQueryConcurrency: SHARD_QUERY_CONCURRENCY,
      forkAuditOverlapMinutes: FORK_AUDIT_OVERLAP_MS / 60_000,
      sweepSchedule: /schedule: (rate\([^)]*\))/.exec(readFileSync(`${root}serverless.yml`, 'utf8'))?.[1] ?? 'on a schedule',
      itemTextChars: (chatItems(1)[0]!.content as string).length,
      typicalItemBytes: itemSize(marshall(typical)),
    },
    targets: TARGETS,
    prices: PRICES,
    tableQuota: TABLE_QUOTA,
    compactionLengths: lengths,
    operations,
    proofs: measured.proofs,
    model,
    sweeps: sweeps.results,
    ...(scaling ? { scaling } : {}),
  };
  results.durationSeconds = Math.round((Date.now() - started) / 1000);
  writeCapacity(`${root}bench/CAPACITY.md`, results);
  // The results file keeps each operation's key designs and its hottest partitions, not every session a sweep touched.
  return { ...results, operations: operations.map((o) => ({ ...o, partitions: o.partitions.slice(0, 5) })) };
}
