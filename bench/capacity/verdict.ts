// The scaling run's conclusion, worded from its own numbers: where the curve flattens, which
// process used the CPU, and what the per-session CPU cost implies for this machine.
import type { ScalingResult, ScalingRow } from './scaling.js';

/** A level that adds less than this over the previous one counts as flat. */
const FLAT_GAIN = 1.15;
/** @smithy/node-http-handler's default agent: sockets per client (one client per process here, per container in Lambda). */
const SDK_MAX_SOCKETS = 50;

function flatPoint(rows: readonly ScalingRow[]): { from: ScalingRow; to: ScalingRow } | null {
  for (let i = 1; i < rows.length; i++) if (rows[i]!.sessionsPerSecond < FLAT_GAIN * rows[i - 1]!.sessionsPerSecond) return { from: rows[i - 1]!, to: rows[i]! };
  return null;
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

export function verdict(s: ScalingResult): string {
  const rows = [...s.rows].sort((a, b) => a.concurrency - b.concurrency);
  if (rows.length === 0) return '';
  const flat = flatPoint(rows);
  const at = flat?.to ?? rows.at(-1)!;
  const curve = rows.map((r) => `${r.sessionsPerSecond}/s at ${r.concurrency}`).join(', ');
  const c = at.cores;
  const consumers = [
    ['DynamoDB Local', c.dynamoLocal],
    ['this process', c.thisProcess],
    ['the Redis nodes', c.redis],
    ['other processes on the machine', c.others],
  ] as const;
  const top = [...consumers].sort((a, b) => b[1] - a[1])[0]!;
  const perSession = at.cpuMsPerSession;
  const cpuMs = perSession.thisProcess + perSession.dynamoLocal + perSession.redis;
  const cpuBound = (s.cpus * 1000) / cpuMs;
  const busy = c.machine / s.cpus;
  const p = at.profile;
  const idle = p['idle (waiting for I/O)'] ?? 0;
  const ours = p['our code (lib, functions)'] ?? 0;
  const sdk = p['AWS SDK'] ?? 0;
  const lines = [
    `**Conclusion.** Sessions/s: ${curve}. ${flat ? `The curve flattens between concurrency ${flat.from.concurrency} and ${flat.to.concurrency} (less than ${Math.round((FLAT_GAIN - 1) * 100)}% more).` : `It was still rising at ${at.concurrency}.`}`,
    `At concurrency ${at.concurrency} the machine's ${s.cpus} CPUs were ${pct(busy)} busy: DynamoDB Local used ${c.dynamoLocal} cores, this process ${c.thisProcess}, Redis ${c.redis}, other processes ${c.others}.`,
    `One session cost ${perSession.dynamoLocal} ms of DynamoDB Local CPU, ${perSession.thisProcess} ms of ours and ${perSession.redis} ms of Redis: ${Math.round(cpuMs)} ms in all, so ${s.cpus} CPUs cap this run near ${Math.round(cpuBound)} sessions/s even with nothing else running (measured: ${at.sessionsPerSecond}/s).`,
    busy >= 0.8
      ? `The limit is CPU on this machine, and the largest share is ${top[0]}'s${perSession.dynamoLocal > perSession.thisProcess ? ': DynamoDB Local spends more CPU per session than our process does, so the flat curve measures DynamoDB Local on 2 cores, not our code' : ': our process spends more CPU per session than DynamoDB Local, so our code is what to optimize first'}.`
      : `The machine still had idle CPU (${pct(1 - busy)}), so the flattening is latency: requests waiting on DynamoDB Local's answers, not CPU.`,
    c.others >= 0.25 * s.cpus
      ? `Other work on this shared machine took ${c.others} of its ${s.cpus} cores during the level, so the absolute rates are lower than on an idle machine; the per-session CPU costs are the comparable numbers.`
      : '',
    rows.some((r) => r.peakDynamoInFlight > SDK_MAX_SOCKETS)
      ? `Above ${SDK_MAX_SOCKETS} DynamoDB calls in flight the SDK's default agent (${SDK_MAX_SOCKETS} sockets per client) queues the rest in this one process; a Lambda container has its own client and one request at a time, so that queue is an artifact of the load generator.`
      : '',
    `Inside this process (main thread, CPU profile of the same run) our own code took ${ours}% of the time, the AWS SDK ${sdk}%, the bench's load generator (building requests, parsing answers: API Gateway's and the client's work in production) ${p['bench harness'] ?? 0}%, and the thread was idle, waiting for answers, ${idle}% of the time.`,
  ];
  return lines.filter(Boolean).join(' ');
}
