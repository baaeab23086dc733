// The scaling run's conclusion, worded from its own numbers: where the curve flattens, which
// process used the CPU, and what the per-session CPU cost implies for this machine.
import type { ScalingResult, ScalingRow } from './scaling.js';

/** A level that adds less than this over the previous one counts as flat. */
const FLAT_GAIN = 1.15;
/** The machine counts as saturated above this share of its CPUs busy. */
const SATURATED = 0.9;
/** @smithy/node-http-handler's default agent: sockets per client (one client per process here, per container in Lambda). */
const SDK_MAX_SOCKETS = 50;

const pct = (x: number) => `${Math.round(x * 100)}%`;
const avg = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / (xs.length || 1);
const r1 = (x: number) => Math.round(x * 10) / 10;
const stackCores = (r: ScalingRow) => r.cores.thisProcess + r.cores.dynamoLocal + r.cores.redis;
const stackMs = (r: ScalingRow) => r.cpuMsPerSession.thisProcess + r.cpuMsPerSession.dynamoLocal + r.cpuMsPerSession.redis;

function flatPoint(rows: readonly ScalingRow[]): ScalingRow | null {
  for (let i = 1; i < rows.length; i++) if (rows[i]!.sessionsPerSecond < FLAT_GAIN * rows[i - 1]!.sessionsPerSecond) return rows[i - 1]!;
  return null;
}

export function verdict(s: ScalingResult): string {
  const rows = [...s.rows].sort((a, b) => a.concurrency - b.concurrency);
  if (rows.length === 0) return '';
  const curve = rows.map((r) => `${r.sessionsPerSecond}/s at ${r.concurrency}`).join(', ');
  const saturated = rows.filter((r) => r.cores.machine >= SATURATED * s.cpus);
  const best = [...rows].sort((a, b) => b.sessionsPerSecond - a.sessionsPerSecond)[0]!;
  const ddbMs = avg(rows.map((r) => r.cpuMsPerSession.dynamoLocal));
  const ourMs = avg(rows.map((r) => r.cpuMsPerSession.thisProcess));
  const redisMs = avg(rows.map((r) => r.cpuMsPerSession.redis));
  const others = avg(rows.map((r) => r.cores.others));
  const p = best.profile;
  const share = (k: keyof typeof p) => p[k] ?? 0;

  const where =
    saturated.length === rows.length
      ? `The machine was saturated at every level (at least ${pct(SATURATED)} of its ${s.cpus} CPUs busy), so the run is CPU-bound from concurrency ${rows[0]!.concurrency} on: more concurrency only queues work. ` +
        `Each level's rate is the CPU our stack (this process, DynamoDB Local, Redis) got divided by the CPU one session needs: ${rows.map((r) => `c=${r.concurrency}: ${stackCores(r).toFixed(2)} cores ÷ ${r1(stackMs(r))} ms`).join(', ')}; ` +
        `the differences between levels are what the machine's other work left over, and a session getting slightly cheaper as batches grow.`
      : (() => {
          const flat = flatPoint(rows);
          return flat
            ? `The curve flattens after concurrency ${flat.concurrency} (the next level adds less than ${Math.round((FLAT_GAIN - 1) * 100)}%).`
            : `It was still rising at ${rows.at(-1)!.concurrency}.`;
        })();
  const who =
    ddbMs > ourMs
      ? `DynamoDB Local is the larger consumer: it needs more CPU per session than our process does, so what flattens the curve is DynamoDB Local (and the other work) on ${s.cpus} cores, not our code.`
      : `Our process is the larger consumer: it needs more CPU per session than DynamoDB Local does, so our code is what to make cheaper first.`;
  const lines = [
    `**Conclusion.** Sessions/s: ${curve}. ${where}`,
    `Per session, DynamoDB Local used ${r1(ddbMs)} ms of CPU, this process ${r1(ourMs)} ms and Redis ${r1(redisMs)} ms (averages over the levels): ${who}`,
    `With the whole machine to itself the stack would top out near ${Math.round((s.cpus * 1000) / (ddbMs + ourMs + redisMs))} sessions/s (${s.cpus} CPUs ÷ ${Math.round(ddbMs + ourMs + redisMs)} ms per session); other work took ${others.toFixed(2)} cores on average during this run.`,
    `Inside this process (main thread, CPU profile of the same run, at the best level c=${best.concurrency}) our own code took ${share('our code (lib, functions)')}% of the time, the AWS SDK ${share('AWS SDK')}%, the Redis client ${share('Redis client')}%, node internals (sockets, timers) ${share('node internals')}%, the bench's load generator ${share('bench harness')}%, and the thread was idle, waiting for answers, ${share('idle (waiting for I/O)')}% of the time: this process is not what limits the run.`,
    rows.some((r) => r.peakDynamoInFlight > SDK_MAX_SOCKETS)
      ? `(Above ${SDK_MAX_SOCKETS} DynamoDB calls in flight the SDK's default agent, ${SDK_MAX_SOCKETS} sockets per client, queues the rest in this one process; a Lambda container has its own client and one request at a time, so that queue belongs to the load generator.)`
      : '',
  ];
  return lines.filter(Boolean).join(' ');
}
