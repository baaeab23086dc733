// Lambda bundles (SPEC P4): size per function from the esbuild metafile of the deployable build
// (infra/build.ts: entry + statically imported chunks; lazily loaded chunks apart), and cold init:
// a fresh `node` imports the bundle and answers its first request against the local stack
// (http: one authenticated GET; afterTurn: one SQS record below the threshold; sweep: one run on
// an empty table; docs: GET /docs/swagger-ui-bundle.js, read from disk), against a fresh `node` importing an empty module, interleaved in one run.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { buildFunctions, inputBytes, packageOf, type BuiltFunction } from '../infra/build.js';
import { ensureTable } from '../infra/table.js';
import { sqsShapedEvent } from '../lib/after-turn/local-invoke.js';
import { ApiKeyStore } from '../lib/api/api-keys.js';
import { createDynamoClient } from '../lib/aws-clients.js';
import { compare, round, type Comparison } from './stats.js';
import { bareShardQueriesMs } from './sweep-floor.js';

const run = promisify(execFile);

export interface BundleRow {
  fn: string;
  /** index.mjs plus the chunks it imports statically: what loading the handler loads. */
  bytes: number;
  kib: number;
  /** Chunks only a dynamic import() that runs loads (the tokenizer, the SDK's unused credential providers). */
  lazyKib: number;
  files: number;
  /** Static files served from disk beside the bundle, gzipped (docs: Swagger UI), not in `bytes`. */
  assetKib: number;
  /** Largest packages (or our own files) by bytes in the entry. */
  topInputs: { path: string; kib: number }[];
  /** In-process `await import(bundle)` vs `await import(empty)`, each in a fresh node process. */
  importMs: Comparison;
  /** Import plus the first request, in-process, vs the empty module's import (SPEC P4 "cold init"). */
  initMs: Comparison;
  /** Whole process (spawn to exit) vs the empty module's. */
  processMs: Comparison;
  /** What the first request answered (http status, failed SQS records, sweep counts): a broken init is not a fast one. */
  firstResponse: string;
  /** Sweep only: its first request (init less import) vs the same shard Queries bare (bench/sweep-floor.ts). */
  firstRequestVsBareQueries?: Comparison;
}

export interface GoalRow {
  id: string;
  measured: number;
  target: number;
  unit: string;
  met: boolean;
}

/**
 * Rows for bench/results/latest.json's `goals` (SPEC P4): the largest entry bundle and each
 * function's cold init net of the empty module. The sweep, whose first request is a whole run
 * over every shard, is held to its import time, and its run to the same Queries sent bare (<= 1.5x).
 */
export function bundleGoals(rows: readonly BundleRow[]): GoalRow[] {
  if (rows.length === 0) return [];
  const kib = Math.max(...rows.map((r) => r.kib));
  const net = (c: Comparison) => round(c.subject.p50 - c.baseline.p50, 1);
  const init = (r: BundleRow) => (r.fn === 'sweep' ? net(r.importMs) : net(r.initMs));
  const initMs = Math.max(...rows.map(init));
  const sweepRun = rows.find((r) => r.firstRequestVsBareQueries)?.firstRequestVsBareQueries;
  return [
    { id: 'P4-bundle-kb-max', measured: kib, target: 1024, unit: 'KiB', met: kib < 1024 },
    { id: 'P4-init-ms', measured: initMs, target: 300, unit: 'ms', met: initMs < 300 },
    ...rows.map((r) => ({ id: `P4-init-ms-${r.fn}`, measured: init(r), target: 300, unit: 'ms', met: init(r) < 300 })),
    ...(sweepRun
      ? [{ id: 'P4-sweep-run-vs-bare-queries', measured: sweepRun.ratioP50, target: 1.5, unit: 'x', met: sweepRun.ratioP50 <= 1.5 }]
      : []),
  ];
}

function topInputs(b: BuiltFunction, n = 4): { path: string; kib: number }[] {
  const byOwner = new Map<string, number>();
  for (const [input, bytes] of inputBytes(b.metafile, b.entryOutputs)) {
    const owner = packageOf(input)?.name ?? input;
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + bytes);
  }
  return [...byOwner]
    .sort((a, c) => c[1] - a[1])
    .slice(0, n)
    .map(([path, bytes]) => ({ path, kib: round(bytes / 1024, 1) }));
}

interface Sample {
  importMs: number;
  initMs: number;
  processMs: number;
  response: string;
}

const lambdaContext = (fn: string) => ({
  functionName: `session-lineage-bench-${fn}`,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:session-lineage-bench-${fn}`,
  memoryLimitInMB: '512',
  awsRequestId: 'bench',
  logGroupName: `/aws/lambda/session-lineage-bench-${fn}`,
  logStreamName: 'bench',
  callbackWaitsForEmptyEventLoop: true,
});

/**
 * One fresh process: import, then (unless `event` is null) call the handler once. The handler's
 * Redis clients would keep the process alive, so it exits explicitly after printing its timings.
 */
async function coldStart(file: string, fn: string, event: unknown, env: NodeJS.ProcessEnv): Promise<Sample> {
  const code = `
    const t0 = performance.now();
    const mod = await import(${JSON.stringify(pathToFileURL(file).href)});
    const t1 = performance.now();
    let response = 'none';
    const event = ${JSON.stringify(event)};
    if (event !== null) {
      const context = { ...${JSON.stringify(lambdaContext(fn))}, getRemainingTimeInMillis: () => 60000 };
      const r = await mod.handler(event, context);
      response = r?.statusCode !== undefined ? 'HTTP ' + r.statusCode : JSON.stringify(r?.batchItemFailures ?? r?.forksFound ?? r);
    }
    const t2 = performance.now();
    process.stdout.write('\\nBENCH ' + JSON.stringify({ importMs: t1 - t0, initMs: t2 - t0, response }) + '\\n', () => process.exit(0));`;
  const started = performance.now();
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], { env, maxBuffer: 16 * 1024 * 1024 });
  const processMs = performance.now() - started;
  const line = stdout.split('\n').find((l) => l.startsWith('BENCH '));
  if (!line) throw new Error(`cold start of ${fn} printed no timings:\n${stdout.slice(-2000)}`);
  return { ...(JSON.parse(line.slice(6)) as Omit<Sample, 'processMs'>), processMs };
}

function httpGet(path: string, apiKey: string) {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: { authorization: `Bearer ${apiKey}` },
    requestContext: { http: { method: 'GET', path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'bench' }, requestId: 'bench' },
    isBase64Encoded: false,
  };
}

function httpPost(path: string, apiKey: string, body: unknown) {
  const event = httpGet(path, apiKey);
  return {
    ...event,
    headers: { ...event.headers, 'content-type': 'application/json' },
    requestContext: { ...event.requestContext, http: { ...event.requestContext.http, method: 'POST' } },
    body: JSON.stringify(body),
  };
}

/** The first request of each function; the session is created through the http bundle itself. */
async function firstRequests(
  http: BuiltFunction,
  env: NodeJS.ProcessEnv,
  apiKey: string,
  tenantId: string,
): Promise<Record<string, unknown>> {
  const created = `
    const { handler } = await import(${JSON.stringify(pathToFileURL(http.outfile).href)});
    const r = await handler(${JSON.stringify(httpPost('/sessions', apiKey, { source: 'bundle-bench' }))}, { awsRequestId: 'bench', getRemainingTimeInMillis: () => 60000 });
    process.stdout.write('\\nBENCH ' + r.body + '\\n', () => process.exit(0));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', created], { env, maxBuffer: 16 * 1024 * 1024 });
  const line = stdout.split('\n').find((l) => l.startsWith('BENCH '));
  const sessionId = line ? (JSON.parse(line.slice(6)) as { session?: { sessionId?: string } }).session?.sessionId : undefined;
  if (!sessionId) throw new Error(`could not create a session through the http bundle:\n${stdout.slice(-2000)}`);
  return {
    http: httpGet(`/sessions/${sessionId}`, apiKey),
    'after-turn': sqsShapedEvent([{ messageId: randomUUID(), body: JSON.stringify({ tenantId, sessionId, origin: 'turn' }) }]),
    sweep: {},
    // The heaviest first request of docs: reads the gzipped Swagger UI bundle from beside index.mjs.
    docs: { ...httpGet('/docs/swagger-ui-bundle.js', apiKey), headers: { 'accept-encoding': 'gzip' } },
  };
}

export async function benchBundles(_functionsDir: string, runs: number, env: NodeJS.ProcessEnv): Promise<BundleRow[]> {
  const outRoot = mkdtempSync(join(tmpdir(), 'bench-bundles-'));
  // A table of its own: the sweep's first run must not depend on what the other benches left behind.
  const tableName = `session-lineage-bundle-bench-${Date.now()}`;
  const ddb = createDynamoClient({ endpoint: env.DYNAMODB_ENDPOINT, region: env.AWS_REGION });
  try {
    await ensureTable(ddb, tableName);
    const tenantId = 'bundle-bench';
    const { key } = await new ApiKeyStore({ client: ddb, tableName }).create(tenantId);
    const childEnv = { ...env, TABLE_NAME: tableName, POWERTOOLS_LOG_LEVEL: 'WARN', COMPACTION_TOKEN_THRESHOLD: '1000000' };
    const built = await buildFunctions(outRoot);
    const http = built.find((b) => b.name === 'http');
    const events = http ? await firstRequests(http, childEnv, key, tenantId) : {};
    const empty = join(outRoot, 'empty.mjs');
    writeFileSync(empty, 'export {};\n');

    const rows: BundleRow[] = [];
    for (const b of built) {
      const subject: Sample[] = [];
      const baseline: Sample[] = [];
      const bareQueries: number[] = [];
      const bundleRun = async () => {
        subject.push(await coldStart(b.outfile, b.name, events[b.name] ?? null, childEnv));
        if (b.name === 'sweep') bareQueries.push(await bareShardQueriesMs(env.DYNAMODB_ENDPOINT, env.AWS_REGION, tableName));
      };
      const emptyRun = async () => baseline.push(await coldStart(empty, 'empty', null, childEnv));
      // One discarded round: DynamoDB Local's JVM answers its first requests of a kind slowly
      // (JIT), which no deployed DynamoDB does; later rounds meet it warm.
      await coldStart(b.outfile, b.name, events[b.name] ?? null, childEnv);
      for (let i = 0; i < runs; i++) {
        // Alternate which goes first so neither always meets a busier machine.
        if (i % 2 === 0) await bundleRun().then(emptyRun);
        else await emptyRun().then(bundleRun);
      }
      rows.push({
        fn: b.name,
        bytes: b.bytes,
        kib: round(b.bytes / 1024, 1),
        lazyKib: round(b.lazyBytes / 1024, 1),
        files: b.files.length,
        assetKib: round(b.assetBytes / 1024, 1),
        topInputs: topInputs(b),
        importMs: compare(
          subject.map((s) => s.importMs),
          baseline.map((s) => s.importMs),
        ),
        initMs: compare(
          subject.map((s) => s.initMs),
          baseline.map((s) => s.importMs),
        ),
        processMs: compare(
          subject.map((s) => s.processMs),
          baseline.map((s) => s.processMs),
        ),
        firstResponse: [...new Set(subject.map((s) => s.response))].join(' | '),
        ...(bareQueries.length
          ? {
              firstRequestVsBareQueries: compare(
                subject.map((s) => s.initMs - s.importMs),
                bareQueries,
              ),
            }
          : {}),
      });
    }
    return rows;
  } finally {
    ddb.destroy();
    rmSync(outRoot, { recursive: true, force: true });
  }
}
