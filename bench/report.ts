// Renders bench results as a plain-text table and as bench/README.md (with the last chaos counts).
import type { JsonBodyBenchResult } from './json-body-bench.js';
import type { LongSessionBench } from './long-session-bench.js';
import type { AppendRow, ReadRow, StorageRow } from './storage-bench.js';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { BundleRow } from './bundle-bench.js';
import type { HeldBenchResult } from './held-bench.js';
import type { CommitBenchResult } from './commit-bench.js';
import type { ContentionRow } from './contention-bench.js';
import type { GoalRow } from './bundle-bench.js';
import type { LeaseBenchResult } from './lease-bench.js';
import type { QuorumBenchResult } from './quorum-bench.js';
import type { ScaleRow } from './scale-bench.js';
import type { TenantBenchRow } from './tenant-bench.js';
import type { TokenBenchRow } from './token-bench.js';
import { SWEEP_SHARD_QUERIES } from './sweep-floor.js';
import type { Comparison } from './stats.js';

export interface BenchResults {
  startedAt: string;
  /** BENCH_SCALE multiplier of iteration counts. */
  scale: number;
  node: string;
  cpus: number;
  durationSeconds?: number;
  lease?: LeaseBenchResult[];
  commit?: CommitBenchResult;
  contention?: ContentionRow[];
  sessions?: ScaleRow[];
  quorum?: QuorumBenchResult;
  bundles?: BundleRow[];
  tokens?: TokenBenchRow[];
  /** P2: one losing compactSession vs one bare SET NX PX round on the same nodes. */
  loser?: Comparison;
  /** Issue 35 item 5: tenant B's p50 while tenant A floods 1 MB appends, over B's p50 alone (byte budget on and off). */
  tenants?: TenantBenchRow[];
  /** Issue 35 (P6): the first in-place compress of a 60,000-item session beside a 6,000-item one. */
  longSessions?: LongSessionBench;
  /** Issue 22 #6: CPU to refuse a 1 MB body of 330,000 numbers, beside a bare JSON.parse of it. */
  jsonBody?: JsonBodyBenchResult;
  /** The client's minified bundle (lib/client, without the Agents SDK). */
  clientBundle?: GoalRow;
  /** A7: capacity of the packed-row layout next to the one-row-per-item layout (bench/storage-bench.ts). */
  storage?: StorageRow[];
  /** P5: warm and cold appends counted, a warm one timed against a bare TransactWriteItems (bench/storage-bench.ts). */
  append?: AppendRow[];
  /** P5: a tail and a page, calls counted, timed against a bare Query of the same rows (bench/storage-bench.ts). */
  reads?: ReadRow[];
  /** Issue 29: a held attempt's begin + commit vs the service engine's compress of the same items (bench/held-bench.ts). */
  held?: HeldBenchResult;
  /** SPEC P1-P4 and the issues' targets, from this run. */
  goals?: GoalRow[];
}

const ms = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)} ms` : 'n/a');
const cmp = (c: Comparison) =>
  `${ms(c.subject.p50)} / ${ms(c.subject.p99)} | ${ms(c.baseline.p50)} / ${ms(c.baseline.p99)} | ${c.ratioP50}x`;

function table(head: string[], rows: (string | number)[][]): string {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export function sections(r: BenchResults): string[] {
  const out: string[] = [];
  if (r.lease) {
    const rows: (string | number)[][] = [];
    for (const l of r.lease) {
      rows.push([`acquire, ${l.nodes} node(s)`, 'SET NX PX', ...cmp(l.acquireVsSetNx).split(' | ')]);
      rows.push([`refresh, ${l.nodes} node(s)`, 'GET', ...cmp(l.refreshVsGet).split(' | ')]);
      rows.push([`release, ${l.nodes} node(s)`, 'GET', ...cmp(l.releaseVsGet).split(' | ')]);
    }
    out.push(
      `### Lease vs bare Redis (same nodes, interleaved, ${r.lease[0]?.iterations} iterations)\n\n` +
        table(['operation', 'baseline', 'lease p50 / p99', 'baseline p50 / p99', 'ratio of p50s'], rows),
    );
  }
  if (r.goals?.length) {
    out.push(
      `### Goals (SPEC P1-P4)\n\n` +
        table(
          ['goal', 'measured', 'target', 'met'],
          r.goals.map((g) => [g.id, `${g.measured} ${g.unit}`, `${g.target} ${g.unit}`, g.met ? 'yes' : '**no**']),
        ),
    );
  }
  if (r.commit) {
    out.push(
      `### Coordinated compaction vs a bare TransactWriteItems of the same items (${r.commit.iterations} iterations each)\n\n` +
        table(
          ['compaction', 'coordinated p50 / p99', 'bare transaction p50 / p99', 'ratio of p50s'],
          [
            ['rotation (acquire, begin ∥ read, ownership check, commit, release)', ...cmp(r.commit.rotationVsBareTransaction).split(' | ')],
            ['in place (same, archive deferred)', ...cmp(r.commit.inPlaceVsBareTransaction).split(' | ')],
            ...(r.commit.rotationVsBareCalls
              ? [
                  [
                    'rotation vs its floor: the same calls bare, in the same order (acquire, UpdateItem ∥ Query, ownership round, TransactWriteItems, release)',
                    ...cmp(r.commit.rotationVsBareCalls).split(' | '),
                  ],
                ]
              : []),
          ],
        ) +
        `\n\nCounted on the real clients (deterministic; a Redis round beside a DynamoDB call is not on the path):\n\n` +
        table(
          ['mode', 'items', 'sequential DynamoDB calls', 'Redis rounds on the path', 'phases'],
          r.commit.trips.map((t) => [t.mode, t.items, t.dynamoSteps, t.redisRounds, t.detail.join(' → ')]),
        ),
    );
  }
  if (r.held) {
    out.push(
      `### Held attempt (the agent's engine, issue 29) vs the service engine's compress of the same ${r.held.items} items (${r.held.iterations} iterations each)\n\n` +
        table(
          ['compaction', 'held begin + commit p50 / p99', 'compress p50 / p99', 'ratio of p50s'],
          [
            ['rotation', ...cmp(r.held.rotateHeldVsCompress).split(' | ')],
            ['in place', ...cmp(r.held.inPlaceHeldVsCompress).split(' | ')],
          ],
        ) +
        `\n\nCounted on the real clients (deterministic):\n\n` +
        table(
          ['what', 'sequential DynamoDB calls', 'Redis rounds', 'phases'],
          r.held.trips.map((t) => [t.what, t.dynamoSteps, t.redisRounds, t.detail.join(' → ')]),
        ),
    );
  }
  if (r.storage) {
    out.push(
      `### Storage layout (SPEC A7): capacity per operation, old one-row-per-item layout vs packed rows, same run\n\n` +
        table(
          ['operation', 'one row per item', 'packed rows', 'DynamoDB calls (packed)'],
          r.storage.map((s) => [
            s.measure,
            s.oldLayout === null ? 'refused (over 400 KB)' : `${s.oldLayout} ${s.unit}`,
            `${s.newLayout} ${s.unit}`,
            s.newCalls,
          ]),
        ),
    );
  }
  if (r.append) {
    out.push(
      `### Appends (SPEC P5): calls counted, a warm append timed against a bare TransactWriteItems of the same rows\n\n` +
        table(
          ['append', 'DynamoDB calls warm / cold', 'warm append p50 / p99', 'bare transaction p50 / p99', 'ratio of p50s'],
          r.append.map((a) => [
            `${a.items} item(s) of 200 B`,
            `${a.warmCalls} / ${a.coldCalls}`,
            ...cmp(a.warmVsBareTransaction).split(' | '),
          ]),
        ),
    );
  }
  if (r.reads) {
    out.push(
      `### Reads (SPEC P5): calls counted, timed against a bare Query of the same rows\n\n` +
        table(
          ['read of 200 items (20 rows of 10)', 'DynamoDB calls', 'read p50 / p99', 'bare Query p50 / p99', 'ratio of p50s'],
          r.reads.map((x) => [x.read, String(x.calls), ...cmp(x.vsBareQuery).split(' | ')]),
        ),
    );
  }
  if (r.loser) {
    out.push(
      `### A losing caller (SPEC P2)\n\n` +
        table(
          ['measure', 'loser p50 / p99', 'bare SET NX PX round p50 / p99', 'ratio of p50s'],
          [['compactSession → skipped/locked (1,000-item session)', ...cmp(r.loser).split(' | ')]],
        ),
    );
  }
  if (r.contention) {
    out.push(
      `### Contention on one session\n\n` +
        table(
          [
            'contenders',
            'rounds',
            'loser → skipped p50 / p99',
            'loser lease decision p50 / p99',
            'Redis GET p50',
            'ratio (skipped / GET)',
            'outcomes',
            'forks',
            'leaked leases',
          ],
          r.contention.map((c) => [
            c.contenders,
            c.rounds,
            `${ms(c.loserSkip.p50)} / ${ms(c.loserSkip.p99)}`,
            `${ms(c.loserLeaseDecision.p50)} / ${ms(c.loserLeaseDecision.p99)}`,
            ms(c.redisRoundTrip.p50),
            Number.isFinite(c.ratioP50) && c.ratioP50 !== null ? `${c.ratioP50}x` : 'n/a (no losers)',
            Object.entries(c.outcomes)
              .map(([k, v]) => `${k} ${v}`)
              .join(', '),
            c.forks,
            c.leakedLeases,
          ]),
        ),
    );
  }
  if (r.sessions) {
    out.push(
      `### Many sessions, bounded concurrency\n\n` +
        table(
          ['sessions', 'concurrency', 'seconds', 'sessions/s', 'compressed', 'other', 'forks'],
          r.sessions.map((s) => [s.sessions, s.concurrency, s.seconds, s.perSecond, s.compressed, JSON.stringify(s.other), s.forks]),
        ),
    );
  }
  if (r.quorum) {
    const q = r.quorum;
    out.push(
      `### Quorum loss (2 of 3 Redis nodes SIGKILLed)\n\n` +
        table(
          ['measure', 'p50 / p99'],
          [
            ['normal acquire (3 up)', `${ms(q.normalAcquire.p50)} / ${ms(q.normalAcquire.p99)}`],
            ['acquire → LeaseUnavailableError (1 up)', `${ms(q.acquireToUnavailable.p50)} / ${ms(q.acquireToUnavailable.p99)}`],
            ['compactSession → skipped (1 up)', `${ms(q.compactionToSkipped.p50)} / ${ms(q.compactionToSkipped.p99)}`],
            ['ratio of p50s (unavailable / normal)', `${q.ratioP50}x`],
            ['outcomes; engine calls', `${JSON.stringify(q.outcomes)}; ${q.engineCalls}`],
          ],
        ),
    );
  }
  if (r.tokens?.length) {
    const perKib = (x: number | null) => (x === null ? 'not run (minutes: quadratic)' : `${x} ms`);
    const ratio = (x: number | null) => (x === null ? '' : `${x}x`);
    out.push(
      `### Token counting per KiB (issue 11 #3: flat means linear; ratios are to the same input at 1 KiB)\n\n` +
        table(
          ['input', 'KiB', 'tokens', 'ours per KiB', 'ours ratio', 'plain gpt-tokenizer per KiB', 'plain ratio'],
          r.tokens.map((t) => [
            t.kind,
            t.kib,
            t.tokens,
            perKib(t.msPerKib),
            ratio(t.ratioTo1Kib),
            perKib(t.plainMsPerKib),
            ratio(t.plainRatioTo1Kib),
          ]),
        ),
    );
  }
  if (r.tenants?.length) {
    out.push(
      `### One tenant's 1 MB floods and another's latency (issue 35 item 5: p50, side by side in one run)\n\n` +
        table(
          ['byte budget', "B's append alone p50 / p99", 'while A floods p50 / p99', 'ratio of p50s', "A's appends 200 / 429", 'A stored'],
          r.tenants.map((t) => [
            t.byteBudget === 'off' ? 'off' : `${Math.round(t.bytesPerSecond / 1024)} KiB/s (default)`,
            `${ms(t.alone.p50)} / ${ms(t.alone.p99)}`,
            `${ms(t.flooded.p50)} / ${ms(t.flooded.p99)}`,
            `${t.ratioP50}x`,
            `${t.floodAccepted} / ${t.floodRefused}`,
            `${t.floodMbPerSecond} MB/s`,
          ]),
        ),
    );
  }
  if (r.longSessions) {
    const l = r.longSessions;
    out.push(
      `### Long sessions (SPEC P6): the first in-place compress, 60,000 vs 6,000 items of 3.5 KB, side by side in one run\n\n` +
        table(
          ['items', 'MB', 'built in', 'first compress', 'outcome', 'items summarized'],
          l.rows.map((x) => [
            x.items,
            x.megabytes,
            `${x.buildSeconds} s`,
            ms(x.firstCompressMs),
            `${x.outcome}${x.partial ? ' (partial)' : ''}`,
            x.replaced,
          ]),
        ) +
        `\n\nRatio of the two: ${l.ratio}x (goal ≤ 3x; before P6, 8.1x: 17.7 s vs 2.2 s).`,
    );
  }
  if (r.jsonBody) {
    const j = r.jsonBody;
    out.push(
      `### Refusing a hostile body (issue 22 #6: CPU, median, side by side in one run)\n\n` +
        table(
          ['body', 'refused with', 'API checks (CPU)', 'bare JSON.parse (CPU)', 'ratio'],
          [
            [
              `${Math.round(j.bytes / 1024)} KiB, ${j.numbers} numbers`,
              j.refusedWith,
              ms(j.refuseCpuMs),
              ms(j.bareParseCpuMs),
              `${j.ratio}x`,
            ],
          ],
        ),
    );
  }
  if (r.bundles?.length) {
    out.push(
      `### Lambda bundles (esbuild with infra/build.ts options: minified ESM)\n\n` +
        table(
          [
            'function',
            'size',
            'largest inputs',
            'import p50 (bundle / empty / ratio)',
            'init = import + first request p50 (bundle / empty)',
            'process p50 (bundle / empty / ratio)',
          ],
          r.bundles.map((b) => [
            b.fn,
            `${b.kib} KiB`,
            b.topInputs.map((t) => `${t.path} ${t.kib} KiB`).join('; '),
            `${ms(b.importMs.subject.p50)} / ${ms(b.importMs.baseline.p50)} / ${b.importMs.ratioP50}x`,
            `${ms(b.initMs.subject.p50)} / ${ms(b.initMs.baseline.p50)}`,
            `${ms(b.processMs.subject.p50)} / ${ms(b.processMs.baseline.p50)} / ${b.processMs.ratioP50}x`,
          ]),
        ) +
        r.bundles
          .filter((b) => b.firstRequestVsBareQueries)
          .map((b) => {
            const c = b.firstRequestVsBareQueries!;
            return (
              `\n\nThe ${b.fn}'s first request is a whole sweep run: ${ms(c.subject.p50)} p50, beside ${ms(c.baseline.p50)} for its ` +
              `${SWEEP_SHARD_QUERIES} shard Queries alone, bare, at the same concurrency (${c.ratioP50}x).`
            );
          })
          .join(''),
    );
  }
  return out;
}

export function summaryTable(r: BenchResults): string {
  return sections(r).join('\n\n');
}

function chaosSection(chaosFile: string): string {
  if (!existsSync(chaosFile)) return 'No chaos run recorded yet: run `npm run test:chaos`.';
  const c = JSON.parse(readFileSync(chaosFile, 'utf8')) as Record<string, number | string>;
  return table(
    [
      'races run',
      'interleavings explored',
      'crashes injected',
      'node faults injected',
      'inputs tried',
      'input violations',
      'forks found',
      'leaked leases',
      'run time',
      'CHAOS_SCALE',
      'when',
    ],
    [
      [
        c.racesRun!,
        c.interleavingsExplored!,
        c.crashesInjected!,
        c.nodeFaultsInjected!,
        c.inputsTried!,
        c.inputViolations ?? 'n/a',
        c.forksFound!,
        c.leakedLeases!,
        `${Math.round(Number(c.durationMs) / 1000)} s`,
        c.scale!,
        c.finishedAt!,
      ],
    ],
  );
}

/** The storm's row (test/chaos/storm.test.ts writes test/chaos/.last-storm.json). */
function stormSection(stormFile: string): string {
  if (!existsSync(stormFile)) return 'No storm recorded yet: run `npm run test:chaos`.';
  const s = JSON.parse(readFileSync(stormFile, 'utf8')) as {
    seconds: number;
    appendsAcknowledged: number;
    appendsPerSecondPerAppender: { min: string; mean: string };
    compactionsCommitted: number;
    compactionsPerSession: number[];
    unavailable: { duringStop: number; otherwise: number };
    forks: number;
    losses: number;
    duplicates: number;
    leftover: { leases: number; attempts: number; orphans: number; tasks: number };
    scale: number;
    finishedAt: string;
  };
  const l = s.leftover;
  return table(
    [
      'storm',
      'appends acknowledged',
      'appends/s per appender (mean / min)',
      'compactions committed (fewest per session)',
      '503s (DynamoDB stopped / otherwise)',
      'forks',
      'losses',
      'duplicates',
      'left after the sweep (leases, attempts, orphans, tasks)',
      'run time',
      'scale',
      'when',
    ],
    [
      [
        '8 appenders, 16 compactors, 1 Redis node killed, DynamoDB stopped 5 s',
        s.appendsAcknowledged,
        `${s.appendsPerSecondPerAppender.mean} / ${s.appendsPerSecondPerAppender.min}`,
        `${s.compactionsCommitted} (${Math.min(...s.compactionsPerSession)})`,
        `${s.unavailable.duringStop} / ${s.unavailable.otherwise}`,
        s.forks,
        s.losses,
        s.duplicates,
        `${l.leases}, ${l.attempts}, ${l.orphans}, ${l.tasks}`,
        `${s.seconds} s`,
        s.scale,
        s.finishedAt,
      ],
    ],
  );
}

function stallSection(stallFile: string): string {
  if (!existsSync(stallFile)) return 'No DynamoDB stall recorded yet: run `npm run test:chaos`.';
  const s = JSON.parse(readFileSync(stallFile, 'utf8')) as {
    backgroundRequests: number;
    backgroundAcknowledged: number;
    backgroundFailed: number;
    acknowledgedLost: number;
    compressAnswers: Record<string, number>;
    compactionsLanded: number;
    nothingAppliedButLanded: number;
    finishedAt: string;
  };
  const answers = Object.entries(s.compressAnswers)
    .map(([code, n]) => `${n} ${code}`)
    .join(', ');
  return table(
    [
      'DynamoDB stall',
      'background requests (acknowledged / refused)',
      'acknowledged appends lost',
      'compress answers',
      'compactions that landed',
      '"nothing applied" answers for a compaction that landed',
      'when',
    ],
    [
      [
        'SIGSTOP at a commit (past the lease TTL with a rival; and with the commit and its verification read timing out)',
        `${s.backgroundRequests} (${s.backgroundAcknowledged} / ${s.backgroundFailed})`,
        s.acknowledgedLost,
        answers || 'none',
        s.compactionsLanded,
        s.nothingAppliedButLanded,
        s.finishedAt,
      ],
    ],
  );
}

function chaosWarning(chaosFile: string): string {
  if (!existsSync(chaosFile)) return '';
  const c = JSON.parse(readFileSync(chaosFile, 'utf8')) as Record<string, number>;
  const bad = [
    c.forksFound ? `${c.forksFound} fork(s)` : '',
    c.leakedLeases ? `${c.leakedLeases} leaked lease(s)` : '',
    c.inputViolations ? `${c.inputViolations} fuzzed request(s) not answered with a 4xx JSON error` : '',
  ].filter(Boolean);
  return bad.length ? `**The last chaos run found: ${bad.join(', ')}.** See the failing test's output.\n\n` : '';
}

export function writeReadme(
  file: string,
  r: BenchResults,
  chaosFile = new URL('../test/chaos/.last-counts.json', import.meta.url).pathname,
  stormFile = new URL('../test/chaos/.last-storm.json', import.meta.url).pathname,
  stallFile = new URL('../test/chaos/.last-stall.json', import.meta.url).pathname,
): void {
  const body = `# Benchmarks and the fault suite

Generated by \`npm run bench\` (last run ${r.startedAt}, ${r.durationSeconds ?? '?'} s, Node ${r.node}, ${r.cpus} CPUs, BENCH_SCALE=${r.scale}).
Raw numbers: \`bench/results/latest.json\` (committed; each run also leaves its own file in the gitignored \`bench/results/runs/\`).

## How to read these numbers

- The machine is shared and noisy, so absolute milliseconds mean little. Each comparison runs the subject and its
  bare baseline **alternately in one run on the same servers** and reports p50 / p99 of each and the **ratio of p50s**.
- Lease rows: \`SessionLease\` (one \`SET NX PX GET\` round; Redlock's token-checked Lua for refresh and release) vs a bare
  \`SET NX PX\` / \`GET\` sent to the same N nodes in parallel. The fence is not part of the lease: beginAttempt issues it.
- Compaction rows (P1): a whole \`compactSession\` with an instant engine (acquire, the begin update that issues the fence
  with the transcript read beside it, the ownership check from the fence on, the commit transaction, release) vs one bare TransactWriteItems
  of the same items the commit writes (the parent's update, the child's record or the archive task, the compacted items)
  on the same DynamoDB Local. The sequential calls are also counted on the real clients.
- Loser row (P2): one \`compactSession\` that loses the lease race (the lease is held) vs one bare \`SET NX PX\` round on
  the same three nodes; a loser reads nothing (C1), so the ratio is the coordination's own cost.
- Contention: N callers compact one session at once while the winner's engine takes 300 ms; "loser → skipped" is
  how long a loser's whole \`compactSession\` call takes to answer \`skipped\` (one Redis round, nothing read, SPEC C1/P2),
  compared with one Redis GET; "lease decision" is the losers' \`tryAcquire\` alone (SET NX PX GET on every node).
  Forks and leaked leases must be 0.
- Quorum loss: two of three Redis nodes are SIGKILLed; a request must learn \`lease_unavailable\` in milliseconds
  (SPEC L4), not after the client's reconnect budget.
- Bundles: each \`functions/*.ts\` bundled by esbuild (the options of infra/build.ts: minified ESM); "import" is the in-process
  \`await import()\` time in a fresh \`node\`, "init" the import plus the first request (SPEC P4's cold init: an http
  GET, one after-turn record below the threshold, one sweep run), "process" the whole spawn-to-exit time, each vs an
  empty module. A sweep run queries every shard of both sharded indexes, so its init is mostly DynamoDB's time; the
  line under the table puts it beside the same Queries sent bare.

${sections(r).join('\n\n')}

## Fault suite (\`npm run test:chaos\`, last run)

${chaosSection(chaosFile)}

${stormSection(stormFile)}

${stallSection(stallFile)}

${chaosWarning(chaosFile)}The counts are summed from every file's afterAll into \`test/chaos/.last-counts.json\`; CHAOS_SCALE multiplies
the iteration counts and the storm's length (default 1: about three minutes on a busy 2-core machine, one of them the storm). What each file proves:

- \`crash-points\`: a child process runs a real \`compactSession\` and \`process.exit\`s after acquire, after
  beginAttempt, after the new messages were written (a DynamoDB client middleware dies as the first batch lands),
  and after commit before release, for both modes: at most one child, the lease frees itself by TTL, a later attempt
  compacts (or adopts), and \`runSweep\` removes the attempt record and every pending message (I1, I3, L7, S1, S2).
- \`redis-node-kill\`: SIGKILL one of three Redis nodes while the winner compacts and rivals race (it still commits
  once), or two of three (no fork; new attempts fail fast and closed; nothing held past the TTL); nodes restart on
  the same port and rejoin the quorum (L4, L6, I1-I3).
- \`dynamodb-stop\`: DynamoDB Local SIGKILLed while the commit transaction is in flight (the attempt errors, never a
  false "compressed", the lease is released, a restarted store works; in-memory DynamoDB Local loses its data on
  restart, so this case cannot inspect what the killed commit left), and SIGSTOPped past the lease TTL during a
  commit while a rival starts (data survives: one child, one "rotated", no orphan after a sweep, every append
  acknowledged during the stall kept once), and SIGSTOPped as a compress commits through the HTTP handler with
  short DynamoDB timeouts, so the commit and its verification read both time out: 503 \`outcome_unknown\`, never
  \`unavailable\` (issue 22), with background appends and reads during every stall (I1-I4, L6, S1, S2; the stall row).
- \`interleavings\`: fast-check runs of 2-6 contenders with random delays, modes and cancellations plus concurrent
  appends: I1-I4 and C9 in every run.
- \`http-fuzz\`: fast-check requests through the local service on its own table (malformed JSON, wrong types,
  malformed items of both formats with deep parts, 100 KB tool arguments and unknown types, bad cursors and
  Idempotency-Keys, metadata with extreme numbers, depth, empty keys and size, long single-run strings, unicode
  edge cases, path traversal, bad credentials): every answer is a 2xx or a 4xx JSON error, never a 5xx, and a 4xx
  writes nothing (F1, F2, A1, A3, A5).
- \`storm\`: 60 s (CHAOS_SCALE scales it) of 8 appenders (10 new items/s each offered, Idempotency-Keys, 409s
  followed to the live session) and 16 compactors in mixed modes on five sessions, over HTTP on a stack of its
  own, with one Redis node SIGKILLed and restarted and DynamoDB Local SIGSTOPped for 5 s; after a sweep a full
  table scan shows no fork, every acknowledged item exactly once (live, or summarized by a committed compaction),
  a compaction per session and no lease, attempt, orphan or task left (I1-I4, S1, S2; the row above).
`;
  writeFileSync(file, body);
}
