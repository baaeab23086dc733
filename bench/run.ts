// `npm run bench`: starts its own local stack, runs every benchmark, writes
// bench/results/runs/<timestamp>.json (gitignored) + latest.json, prints a summary table and regenerates bench/README.md.
// BENCH_SCALE (default 1) multiplies iteration counts; `npm run bench -- lease commit` or
// BENCH_ONLY=lease,commit picks sections (their results are merged into latest.json). `capacity`
// (bench/capacity: writes bench/CAPACITY.md; its scaling run takes minutes) runs only when named.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startLocalStack } from '../infra/local/stack.js';
import { startRedis } from '../infra/local/processes.js';
import { makeCoordinator } from '../test/fixtures/coordinator.js';
import { benchBundles } from './bundle-bench.js';
import { benchCapacity, type CapacityResults } from './capacity/index.js';
import { benchClientBundle } from './client-bench.js';
import { benchCommit } from './commit-bench.js';
import { benchHeld } from './held-bench.js';
import { benchContention, benchLoser } from './contention-bench.js';
import { goalsOf } from './goals.js';
import { benchJsonBody } from './json-body-bench.js';
import { benchLongSessions } from './long-session-bench.js';
import { benchLease } from './lease-bench.js';
import { benchQuorumLoss } from './quorum-bench.js';
import { writeReadme, summaryTable, type BenchResults } from './report.js';
import { benchScale } from './scale-bench.js';
import { benchAppend, benchReads, benchStorage } from './storage-bench.js';
import { benchTenants } from './tenant-bench.js';
import { benchTokens } from './token-bench.js';

const scale = Number(process.env.BENCH_SCALE ?? 1) || 1;
const n = (x: number) => Math.max(3, Math.round(x * scale));
const named = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const only = new Set([...named, ...(process.env.BENCH_ONLY ?? '').split(',').filter(Boolean)]);
const want = (s: string) => (only.size === 0 ? s !== 'capacity' : only.has(s));
const root = fileURLToPath(new URL('..', import.meta.url));

// `--readme-only`: re-render bench/README.md from the last results and the last chaos counts.
if (process.argv.includes('--readme-only')) {
  const last = JSON.parse(readFileSync(`${root}bench/results/latest.json`, 'utf8')) as BenchResults;
  writeReadme(`${root}bench/README.md`, last);
  console.log(summaryTable(last));
  process.exit(0);
}

const started = Date.now();
// Own servers always (env: {}), never whatever REDIS_URLS the shell points at.
const stack = await startLocalStack({ redisNodes: 3, tableName: 'session-lineage-bench', env: {} });
const single = await startRedis();
const coord = await makeCoordinator({ redisUrls: stack.redisUrls, dynamodbEndpoint: stack.dynamodbEndpoint, tableName: stack.tableName });
const results: BenchResults & { capacity?: CapacityResults } = {
  startedAt: new Date(started).toISOString(),
  scale,
  node: process.version,
  cpus: (await import('node:os')).cpus().length,
};
const step = (name: string) => console.error(`[bench] ${name} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
try {
  if (want('lease')) {
    step('lease, 1 node');
    const one = await benchLease([single.url], n(300));
    step('lease, 3 nodes');
    const three = await benchLease(stack.redisUrls, n(300));
    results.lease = [one, three];
  }
  if (want('commit')) {
    step('commit');
    results.commit = await benchCommit(coord, n(60));
  }
  if (want('held')) {
    step('held attempt vs compress (issue 29)');
    results.held = await benchHeld(coord, n(30));
  }
  if (want('contention')) {
    step('contention');
    results.contention = await benchContention(coord, [1, 4, 16, 64], n(4));
    step('loser (P2)');
    results.loser = await benchLoser(coord, n(200));
  }
  if (want('scale')) {
    step('scale');
    results.sessions = await benchScale(
      coord,
      [100, 300, 1000].map((s) => Math.max(10, Math.round(s * Math.min(1, scale)))),
      32,
    );
  }
  if (want('storage')) {
    step('storage layout (A7)');
    results.storage = await benchStorage(stack);
    step('append vs a bare transaction (P5)');
    results.append = await benchAppend(stack, n(60));
    step('reads vs a bare Query (P5)');
    results.reads = await benchReads(stack, n(60));
  }
  if (want('quorum')) {
    step('quorum loss');
    results.quorum = await benchQuorumLoss(coord.store, n(30));
  }
  if (want('tokens')) {
    step('tokens');
    results.tokens = await benchTokens(n(3));
  }
  if (want('bundles')) {
    step('bundles');
    results.bundles = await benchBundles(`${root}functions`, n(6), {
      PATH: process.env.PATH,
      TABLE_NAME: stack.tableName,
      AWS_REGION: 'us-east-1',
      REDIS_URLS: stack.redisUrls.join(','),
      DYNAMODB_ENDPOINT: stack.dynamodbEndpoint,
    });
  }
  if (want('tenants')) {
    step('tenant isolation under 1 MB floods (issue 35 item 5)');
    results.tenants = await benchTenants(stack, n(20));
  }
  if (want('long-session')) {
    step('first in-place compress, 60,000 vs 6,000 items (P6)');
    results.longSessions = await benchLongSessions(coord);
  }
  if (want('json-body')) {
    step('json body');
    results.jsonBody = benchJsonBody(n(15));
  }
  if (want('client')) {
    step('client bundle');
    results.clientBundle = (await benchClientBundle()).goal;
  }
  if (want('capacity')) {
    results.capacity = await benchCapacity({
      stack,
      scalingSessions: Number(process.env.BENCH_SCALING ?? 1) ? Math.max(20, Math.round(2000 * scale)) : 0,
      step,
    });
  }
} finally {
  await coord.close();
  await single.stop();
  await stack.stop();
}
results.durationSeconds = Math.round((Date.now() - started) / 1000);
mkdirSync(`${root}bench/results`, { recursive: true });
const stamp = results.startedAt.replace(/[:.]/g, '-');
// A run replaces only the sections it ran (a full run leaves `capacity` as its own run wrote it);
// the run facts stay those of the last full run.
const latest = `${root}bench/results/latest.json`;
const previous = existsSync(latest) ? (JSON.parse(readFileSync(latest, 'utf8')) as Record<string, unknown>) : undefined;
const runFacts = new Set(['startedAt', 'scale', 'node', 'cpus', 'durationSeconds']);
const fresh = Object.fromEntries(Object.entries(results).filter(([k]) => only.size === 0 || !runFacts.has(k)));
// Goals from the merged sections, so a partial run never drops the goals of the sections it skipped.
const merged = { ...previous, ...fresh } as BenchResults;
results.goals = goalsOf(results);
merged.goals = goalsOf(merged);
writeFileSync(latest, JSON.stringify(merged, null, 2) + '\n');
// Each run's own numbers go to bench/results/runs/ (gitignored): only latest.json is committed.
mkdirSync(`${root}bench/results/runs`, { recursive: true });
writeFileSync(`${root}bench/results/runs/${stamp}.json`, JSON.stringify(results, null, 2) + '\n');
console.log(summaryTable(results));
if (results.capacity) console.log(`\ncapacity model: bench/CAPACITY.md (${results.capacity.operations.length} operations priced)`);
if (only.size === 0) writeReadme(`${root}bench/README.md`, results);
console.log(`\nbench took ${results.durationSeconds} s; results in bench/results/latest.json`);
