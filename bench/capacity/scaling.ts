// The scaling run: distinct sessions (each: create, append, compress rotate, through the HTTP
// handler in this process) at growing concurrency, on DynamoDB Local. Timed (it is the one
// timed part of the capacity bench), with the CPU of every process involved measured over the
// same interval and a CPU profile of this process, so a flat curve can be explained.
import { randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { ensureTable } from '../../infra/table.js';
import { createDynamoClient } from '../../lib/aws-clients.js';
import { httpDeps, Runtime } from '../../lib/runtime.js';
import { round } from '../stats.js';
import { mapLimit } from '../../test/fixtures/map-limit.js';
import { machineCpuSeconds, ownersOf, processCpuSeconds, profiled, type Owner } from './cpu.js';
import { apiKeyFor, chatItems, httpAs } from './fixtures.js';

export interface ScalingOptions {
  env: Record<string, string>;
  endpoint: string;
  concurrencies: readonly number[];
  sessions: number;
  itemsPerSession: number;
  /** Processes whose CPU the run reports: DynamoDB Local and the Redis nodes. */
  dynamoPid: number;
  redisPids: readonly number[];
}

export interface ScalingRow {
  concurrency: number;
  sessions: number;
  seconds: number;
  sessionsPerSecond: number;
  outcomes: Record<string, number>;
  forks: number;
  /** Most DynamoDB requests in flight at once from this process. */
  peakDynamoInFlight: number;
  /** CPU cores used on average over the interval. */
  cores: { thisProcess: number; dynamoLocal: number; redis: number; machine: number; others: number };
  /** CPU milliseconds per session. */
  cpuMsPerSession: { thisProcess: number; dynamoLocal: number; redis: number };
  /** Share of the profiled main thread's time, by owner (percent). */
  profile: Partial<Record<Owner, number>>;
}

export interface ScalingResult {
  cpus: number;
  itemsPerSession: number;
  loadAverageBefore: number[];
  loadAverageAfter: number[];
  rows: ScalingRow[];
}

export async function runScaling(opts: ScalingOptions): Promise<ScalingResult> {
  const { loadavg } = await import('node:os');
  const before = loadavg().map((x) => round(x, 2));
  const rows: ScalingRow[] = [];
  for (const concurrency of opts.concurrencies) rows.push(await level(opts, concurrency));
  return {
    cpus: cpus().length,
    itemsPerSession: opts.itemsPerSession,
    loadAverageBefore: before,
    loadAverageAfter: loadavg().map((x) => round(x, 2)),
    rows,
  };
}

async function level(opts: ScalingOptions, concurrency: number): Promise<ScalingRow> {
  // A fresh table per level, so a later level does not pay for a larger table.
  const tableName = `capacity-scaling-${concurrency}-${randomUUID().slice(0, 8)}`;
  const admin = createDynamoClient({ endpoint: opts.endpoint, maxAttempts: 3 });
  await ensureTable(admin, tableName);
  // The per-tenant limits (50 req/s by default) would refuse the scaling run's own load: it measures the store and the lease.
  const rt = new Runtime({
    env: { ...opts.env, TABLE_NAME: tableName, RATE_LIMIT_REQUESTS_PER_SECOND: '0', RATE_LIMIT_COMPRESSIONS_PER_MINUTE: '0' },
  });
  try {
    const core = await rt.core();
    const http = httpAs(await httpDeps(rt), await apiKeyFor(core, `scale-${concurrency}`));
    let inFlight = 0;
    let peak = 0;
    core.dynamo.middlewareStack.add(
      (next) => async (args) => {
        peak = Math.max(peak, ++inFlight);
        try {
          return await next(args);
        } finally {
          inFlight--;
        }
      },
      { step: 'initialize', name: 'scaling-in-flight' },
    );
    const items = chatItems(opts.itemsPerSession);
    const outcomes: Record<string, number> = {};
    const one = async () => {
      const created = (await http('POST', '/sessions', { body: { source: 'scaling' } })) as { session: { sessionId: string } };
      const path = `/sessions/${created.session.sessionId}`;
      await http('POST', `${path}/messages`, { body: { messages: items } });
      const out = (await http('POST', `${path}/compress`, { body: { mode: 'rotate' } })) as { outcome: string };
      outcomes[out.outcome] = (outcomes[out.outcome] ?? 0) + 1;
    };
    // Warm the clients and the tokenizer outside the measured interval.
    await mapLimit(Array.from({ length: Math.min(concurrency, 16) }), concurrency, one);
    Object.keys(outcomes).forEach((k) => delete outcomes[k]);
    peak = 0;

    const cpu0 = process.cpuUsage();
    const ddb0 = processCpuSeconds(opts.dynamoPid);
    const redis0 = opts.redisPids.map(processCpuSeconds);
    const m0 = machineCpuSeconds();
    const t0 = performance.now();
    const { profile } = await profiled(() => mapLimit(Array.from({ length: opts.sessions }), concurrency, one));
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const own = (cpu.user + cpu.system) / 1e6;
    const ddb = processCpuSeconds(opts.dynamoPid) - ddb0;
    const redis = opts.redisPids.reduce((s, pid, i) => s + processCpuSeconds(pid) - redis0[i]!, 0);
    const m1 = machineCpuSeconds();
    const machine = m1.busy - m0.busy;

    const owners = ownersOf(profile);
    const total = Object.values(owners).reduce((a, b) => a + b, 0) || 1;
    const forks = (await core.store.findAllForks()).length;
    return {
      concurrency,
      sessions: opts.sessions,
      seconds: round(seconds, 2),
      sessionsPerSecond: round(opts.sessions / seconds, 1),
      outcomes,
      forks,
      peakDynamoInFlight: peak,
      cores: {
        thisProcess: round(own / seconds, 2),
        dynamoLocal: round(ddb / seconds, 2),
        redis: round(redis / seconds, 2),
        machine: round(machine / seconds, 2),
        others: round(Math.max(0, machine - own - ddb - redis) / seconds, 2),
      },
      cpuMsPerSession: {
        thisProcess: round((own * 1000) / opts.sessions, 2),
        dynamoLocal: round((ddb * 1000) / opts.sessions, 2),
        redis: round((redis * 1000) / opts.sessions, 2),
      },
      profile: Object.fromEntries(
        Object.entries(owners)
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => [k, round((100 * v) / total, 1)]),
      ),
    };
  } finally {
    await rt.close();
    // DynamoDB Local keeps tables in memory: drop this level's before the next one.
    await admin.send(new DeleteTableCommand({ TableName: tableName })).catch(() => undefined);
    admin.destroy();
  }
}
