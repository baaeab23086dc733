// `npm start`: the whole service on this machine. Starts the local stack (3 Redis nodes,
// DynamoDB Local keeping its data under .local-data/, the table), reuses or creates the dev API
// key, writes infra/local/.local-stack.json for the CLI, builds the bundles and runs them under
// serverless-offline (HTTP on :3000, Lambda invoke on :3002; it also runs the sweep schedule,
// every minute here), and on Ctrl-C / SIGTERM / SIGHUP stops every process it started, by PID.
//
// It fails loudly instead of half-running: a taken port is refused before anything starts,
// "running" is printed only once our own API answered, and if serverless-offline or DynamoDB
// Local dies afterwards, everything is stopped and the exit code is 1. A Redis node that dies is
// different: the lease is a quorum, so the service keeps serving (one log line names the node and
// the command that restarts it), as it would when one of three real nodes goes away.
//
// Every child runs in its own process group: a terminal's Ctrl-C reaches only this process, which
// then stops the children in order (a child dying of that same SIGINT first would look like a crash).
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildFunctions, projectRoot } from '../build.js';
import { ApiKeyStore } from '../../lib/api/api-keys.js';
import { createDynamoClient } from '../../lib/aws-clients.js';
import { startControlServer, type ControlServer } from './control.js';
import { startOffline, type OfflineProcess } from './offline.js';
import { assertPortFree, type LocalProcess, type ProcessExit } from './processes.js';
import { isPidAlive, LOCAL_STACK_FILE, type LocalStackFile, type StartingStackFile } from './stack-file.js';
import { startLocalStack, stackEnv, type LocalStack } from './stack.js';

const USAGE = 'usage: npm start [-- --fresh]   (--fresh: delete the local data first; README "Running locally")';
let fresh: boolean;
try {
  fresh = parseArgs({ options: { fresh: { type: 'boolean' } }, strict: true }).values.fresh === true;
} catch (err) {
  console.error(`npm start: ${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
  process.exit(2);
}

const HTTP_PORT = Number(process.env.HTTP_PORT ?? 3000);
const LAMBDA_PORT = Number(process.env.LAMBDA_PORT ?? 3002);
/** Where the stack file goes (tests point it elsewhere so a developer's running stack is left alone). */
const STACK_FILE = process.env.LOCAL_STACK_FILE || LOCAL_STACK_FILE;
const DATA_DIR = resolve(process.env.LOCAL_DATA_DIR || join(projectRoot, '.local-data'));
const DYNAMODB_DIR = join(DATA_DIR, 'dynamodb');
const DEV_KEY_FILE = join(DATA_DIR, 'dev-api-key.json');
fresh ||= process.env.LOCAL_FRESH === '1';
/** serverless-offline's schedule for the sweep (serverless.yml, stage local); AWS rate() syntax. */
const SWEEP_RATE = process.env.LOCAL_SWEEP_RATE || '1 minute';
const DEV_TENANT = process.env.DEV_TENANT ?? 'dev';
/**
 * Per-tenant limits under npm start (issue 34): high enough that the README's steps, the example
 * agent and ~10 concurrent agents of one tenant never meet them; a deployed stage defaults to 50 / 60 /
 * 2 MiB/s (lib/config.ts). Set any of them to try another value (0 turns a limit off).
 */
const LIMITS = {
  RATE_LIMIT_REQUESTS_PER_SECOND: process.env.RATE_LIMIT_REQUESTS_PER_SECOND || '1000',
  RATE_LIMIT_COMPRESSIONS_PER_MINUTE: process.env.RATE_LIMIT_COMPRESSIONS_PER_MINUTE || '600',
  // 50 MiB/s: an import of 5 MB appends is not refused on one machine; a stage defaults to 2 MiB/s.
  RATE_LIMIT_BODY_BYTES_PER_SECOND: process.env.RATE_LIMIT_BODY_BYTES_PER_SECOND || String(50 * 1024 * 1024),
};
const limitText = (value: string, unit: string) => (Number(value) === 0 ? 'off' : `${value} ${unit}`);

let stack: LocalStack | undefined;
let offline: OfflineProcess | undefined;
let control: ControlServer | undefined;
/** Startup steps in flight: a Ctrl-C during startup waits for them, then stops what they started. */
const starting = new Set<Promise<unknown>>();
let wroteStackFile = false;
let stopping = false;

/** Thrown into the startup sequence once a stop began: the rest of startup is skipped. */
class Stopping extends Error {}

/**
 * One startup step. `p` itself records what it started (stack, offline, control), so a shutdown
 * that waited for it stops that too; a step that finishes after a stop began ends the startup.
 */
async function step<T>(p: Promise<T>): Promise<T> {
  starting.add(p);
  const settled = await p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  starting.delete(p);
  if (stopping) throw new Stopping('stopping');
  if (!settled.ok) throw settled.error;
  return settled.value;
}

async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    console.log('\nstopping local service...');
    await Promise.allSettled([...starting]);
    await control?.close().catch((err: unknown) => console.error('control server:', err));
    await offline?.stop().catch((err: unknown) => console.error('serverless offline:', err));
    await stack?.stop().catch((err: unknown) => console.error('local stack:', err));
    if (wroteStackFile) rmSync(STACK_FILE, { force: true });
    console.log('stopped.');
    process.exit(code);
  }
  // A second signal while stopping: the first shutdown exits once everything is down.
  return new Promise<never>(() => undefined);
}

function fail(message: string): Promise<never> {
  console.error(`\nnpm start failed: ${message}`);
  return shutdown(1);
}

function describeExit(e: ProcessExit): string {
  return e.signal ? `killed by ${e.signal}` : `exit code ${e.code}`;
}

/** Another `npm start` owns the stack file while its pid is alive. */
function runningInstance(): number | undefined {
  if (!existsSync(STACK_FILE)) return undefined;
  try {
    const { pid } = JSON.parse(readFileSync(STACK_FILE, 'utf8')) as Partial<LocalStackFile>;
    if (typeof pid !== 'number' || pid === process.pid) return undefined;
    return isPidAlive(pid) ? pid : undefined;
  } catch {
    return undefined; // unreadable file: a stale file from a killed run
  }
}

const redisNodes = (s: LocalStack) => s.processes.filter((p) => p.name.startsWith('redis'));
const quorumOf = (n: number) => Math.floor(n / 2) + 1;

/** A Redis node that dies is reported, once, and left down until someone restarts it. */
function watchRedis(s: LocalStack, node: LocalProcess): void {
  void node.whenExited.then((e) => {
    if (stopping) return;
    const nodes = redisNodes(s);
    const live = nodes.filter((p) => !p.exited).length;
    const serving =
      live >= quorumOf(nodes.length)
        ? `leases still work on ${live} of ${nodes.length} nodes`
        : `only ${live} of ${nodes.length} nodes left: compress answers 503 lease_unavailable until ${quorumOf(nodes.length)} are up`;
    console.error(
      `redis node ${node.name} (pid ${node.pid}) died (${describeExit(e)}); ${serving}; restart it: npm run stack -- restart ${node.name}`,
    );
  });
}

function stackFile(s: LocalStack, baseUrl: string, lambdaEndpoint: string, controlUrl: string): LocalStackFile {
  return {
    redisUrls: s.redisUrls,
    dynamodbEndpoint: s.dynamodbEndpoint,
    tableName: s.tableName,
    baseUrl,
    lambdaEndpoint,
    pid: process.pid,
    controlUrl,
    redisNodes: redisNodes(s).map((p) => ({ name: p.name, url: p.url, pid: p.pid })),
    ...(process.env.DYNAMODB_ENDPOINT ? {} : { dataDir: DYNAMODB_DIR }),
  };
}

/** Write-then-rename: a CLI reading the file meanwhile never sees half of it. */
function writeStackFileAtomically(contents: LocalStackFile | StartingStackFile): void {
  const tmp = `${STACK_FILE}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(contents, null, 2) + '\n');
  renameSync(tmp, STACK_FILE);
}

/** The dev key of the last run when the data still has it (the key itself is kept only in DATA_DIR); else a new one. */
async function devApiKey(s: LocalStack): Promise<{ key: string; reused: boolean }> {
  const ddb = createDynamoClient({ endpoint: s.dynamodbEndpoint, maxAttempts: 3 });
  try {
    const store = new ApiKeyStore({ client: ddb, tableName: s.tableName });
    try {
      const saved = JSON.parse(readFileSync(DEV_KEY_FILE, 'utf8')) as { key?: unknown; tenant?: unknown };
      if (typeof saved.key === 'string' && saved.tenant === DEV_TENANT && (await store.resolve(saved.key)) === DEV_TENANT) {
        return { key: saved.key, reused: true };
      }
    } catch {
      // no saved key (first run, --fresh) or an unreadable file: make a new one
    }
    const { key } = await store.create(DEV_TENANT);
    mkdirSync(DATA_DIR, { recursive: true });
    writeFileSync(DEV_KEY_FILE, JSON.stringify({ tenant: DEV_TENANT, key }) + '\n', { mode: 0o600 });
    return { key, reused: false };
  } finally {
    ddb.destroy();
  }
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));
process.on('SIGHUP', () => void shutdown(0));

try {
  // Before starting anything: the two fixed ports must be ours to take.
  await assertPortFree(HTTP_PORT, 'HTTP API; set HTTP_PORT to use another');
  await assertPortFree(LAMBDA_PORT, 'Lambda invoke API; set LAMBDA_PORT to use another');
  const other = runningInstance();
  if (other !== undefined) throw new Error(`another npm start (pid ${other}) is running and owns ${STACK_FILE}`);
  // First thing, a marker: a CLI started meanwhile waits for the stack instead of answering
  // "run npm start first" (issue 34). The full file follows before the HTTP port opens.
  writeStackFileAtomically({ starting: true, pid: process.pid } satisfies StartingStackFile);
  wroteStackFile = true;

  if (fresh) {
    rmSync(DYNAMODB_DIR, { recursive: true, force: true });
    rmSync(DEV_KEY_FILE, { force: true });
    console.log(`--fresh: deleted the local data in ${DATA_DIR}`);
  }
  console.log('starting local stack (3 Redis nodes, DynamoDB Local)...');
  const s = await step(startLocalStack({ redisNodes: 3, dynamoDbPath: DYNAMODB_DIR, detached: true }).then((x) => (stack = x)));
  for (const p of s.processes) console.log(`  started ${p.name} (pid ${p.pid})`);
  if (!process.env.DYNAMODB_ENDPOINT) console.log(`  data: ${DYNAMODB_DIR} (kept across restarts; npm start -- --fresh starts empty)`);
  const env = stackEnv(s);
  const { key, reused } = await step(devApiKey(s));

  // The stack file is complete before the HTTP port opens: whoever sees the port answer finds it (issue 34).
  const baseUrl = `http://127.0.0.1:${HTTP_PORT}`;
  const lambdaEndpoint = `http://127.0.0.1:${LAMBDA_PORT}`;
  const writeStackFile = (controlUrl: string) => {
    writeStackFileAtomically(stackFile(s, baseUrl, lambdaEndpoint, controlUrl));
    wroteStackFile = true;
  };
  const c = await step(
    startControlServer({
      async restartRedis(name) {
        const node = await s.restartRedis(name);
        watchRedis(s, node);
        if (control) writeStackFile(control.url);
        console.log(`restarted ${node.name} (pid ${node.pid})`);
        return { name: node.name, url: node.url, pid: node.pid };
      },
    }).then((x) => (control = x)),
  );
  writeStackFile(c.url);

  console.log('building functions...');
  for (const b of await step(buildFunctions())) console.log(`  ${b.name}: ${(b.bytes / 1024 / 1024).toFixed(2)} MB`);

  console.log('starting serverless offline...');
  const o = await step(
    startOffline({
      httpPort: HTTP_PORT,
      lambdaPort: LAMBDA_PORT,
      env: { ...env, ...LIMITS, LOCAL_LAMBDA_ENDPOINT: lambdaEndpoint, LOCAL_SWEEP_RATE: SWEEP_RATE },
      output: 'inherit',
      detached: true,
    }).then((x) => (offline = x)),
  );

  // From here on every child is watched. serverless-offline or DynamoDB Local dying takes the whole
  // service down, loudly; a Redis node dying is reported and left to the quorum.
  void o.whenExited.then((e) => {
    if (!stopping)
      void fail(`serverless offline (pid ${o.pid}) exited unexpectedly (${describeExit(e)}); last output:\n${o.log().slice(-2000)}`);
  });
  for (const p of s.processes) {
    if (p.name.startsWith('redis')) watchRedis(s, p);
    else
      void p.whenExited.then((e) => {
        if (!stopping) void fail(`${p.name} (pid ${p.pid}) exited unexpectedly (${describeExit(e)})`);
      });
  }

  console.log(`
session-lineage is running at ${o.baseUrl}  (Lambda invoke API at ${lambdaEndpoint}, serverless-offline pid ${o.pid})
API reference: ${o.baseUrl}/docs  (document: ${o.baseUrl}/openapi.json)
stack file: ${STACK_FILE}
data: ${process.env.DYNAMODB_ENDPOINT ? `your DynamoDB at ${process.env.DYNAMODB_ENDPOINT}` : `${DYNAMODB_DIR} (delete it, or npm start -- --fresh, to start empty)`}
sweep: every ${SWEEP_RATE} (serverless-offline's schedule; LOCAL_SWEEP_RATE)
per-tenant limits: ${limitText(LIMITS.RATE_LIMIT_REQUESTS_PER_SECOND, 'requests/s')} (RATE_LIMIT_REQUESTS_PER_SECOND), ${limitText(LIMITS.RATE_LIMIT_COMPRESSIONS_PER_MINUTE, 'compressions/min')} (RATE_LIMIT_COMPRESSIONS_PER_MINUTE), ${limitText(LIMITS.RATE_LIMIT_BODY_BYTES_PER_SECOND, 'body bytes/s')} (RATE_LIMIT_BODY_BYTES_PER_SECOND)
SessionCompacted events (JSON lines): ${o.eventsFile}
dev API key (tenant "${DEV_TENANT}"${reused ? ', same as last run' : ''}):
  ${key}

try it:
  curl -s -X POST ${o.baseUrl}/sessions -H 'authorization: Bearer ${key}' -H 'content-type: application/json' -d '{"source":"curl"}'

more keys: npm run cli -- keys create --tenant <name>
a Redis node that dies stays down (the service keeps serving on the quorum): npm run stack -- restart <node>
Ctrl-C stops everything.`);
} catch (err) {
  // Stopping: the signal's shutdown is already stopping everything and exits when done.
  if (!(err instanceof Stopping)) await fail(err instanceof Error ? err.message : String(err));
}
