// `npm start`: the whole service on this machine. Starts the local stack (3 Redis nodes,
// DynamoDB Local, the table), creates a dev API key, writes infra/local/.local-stack.json
// for the CLI, builds the bundles, runs them under serverless-offline (HTTP on :3000,
// Lambda invoke on :3002), runs the sweep every minute, and on Ctrl-C / SIGTERM stops
// every process it started, by PID.
//
// It fails loudly instead of half-running: a taken port is refused before anything starts,
// "running" is printed only once our own API answered, and if serverless-offline or a stack
// process dies afterwards, everything is stopped and the exit code is 1.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { buildFunctions } from '../build.js';
import { ApiKeyStore } from '../../lib/api/api-keys.js';
import { createDynamoClient } from '../../lib/clients.js';
import { invokeLocal, startOffline, type OfflineProcess } from './offline.js';
import { assertPortFree, type ProcessExit } from './processes.js';
import { LOCAL_STACK_FILE, type LocalStackFile } from './stack-file.js';
import { startLocalStack, stackEnv, type LocalStack } from './stack.js';

const HTTP_PORT = Number(process.env.HTTP_PORT ?? 3000);
const LAMBDA_PORT = Number(process.env.LAMBDA_PORT ?? 3002);
/** Where the stack file goes (tests point it elsewhere so a developer's running stack is left alone). */
const STACK_FILE = process.env.LOCAL_STACK_FILE || LOCAL_STACK_FILE;
const SWEEP_EVERY_MS = 60_000;
const DEV_TENANT = process.env.DEV_TENANT ?? 'dev';

let stack: LocalStack | undefined;
let offline: OfflineProcess | undefined;
let sweepTimer: NodeJS.Timeout | undefined;
let wroteStackFile = false;
let stopping = false;

async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    console.log('\nstopping local service...');
    if (sweepTimer) clearInterval(sweepTimer);
    await offline?.stop().catch((err: unknown) => console.error('serverless offline:', err));
    await stack?.stop().catch((err: unknown) => console.error('local stack:', err));
    if (wroteStackFile) rmSync(STACK_FILE, { force: true });
    console.log('stopped.');
  }
  process.exit(code);
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
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined; // unreadable file or dead pid: a stale file from a killed run
  }
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

try {
  // Before starting anything: the two fixed ports must be ours to take.
  await assertPortFree(HTTP_PORT, 'HTTP API; set HTTP_PORT to use another');
  await assertPortFree(LAMBDA_PORT, 'Lambda invoke API; set LAMBDA_PORT to use another');
  const other = runningInstance();
  if (other !== undefined) throw new Error(`another npm start (pid ${other}) is running and owns ${STACK_FILE}`);

  console.log('starting local stack (3 Redis nodes, DynamoDB Local)...');
  stack = await startLocalStack({ redisNodes: 3 });
  for (const p of stack.processes) console.log(`  started ${p.name} (pid ${p.pid})`);
  const env = stackEnv(stack);

  const ddb = createDynamoClient({ endpoint: stack.dynamodbEndpoint, maxAttempts: 3 });
  const { key } = await new ApiKeyStore({ client: ddb, tableName: stack.tableName }).create(DEV_TENANT);
  ddb.destroy();

  console.log('building functions...');
  for (const b of await buildFunctions()) console.log(`  ${b.name}: ${(b.bytes / 1024 / 1024).toFixed(2)} MB`);

  console.log('starting serverless offline...');
  const lambdaEndpoint = `http://127.0.0.1:${LAMBDA_PORT}`;
  offline = await startOffline({
    httpPort: HTTP_PORT,
    lambdaPort: LAMBDA_PORT,
    env: { ...env, LOCAL_LAMBDA_ENDPOINT: lambdaEndpoint },
    output: 'inherit',
  });

  // From here on every child is watched: one dying takes the whole service down, loudly.
  const off = offline;
  void off.whenExited.then((e) => {
    if (!stopping)
      void fail(`serverless offline (pid ${off.pid}) exited unexpectedly (${describeExit(e)}); last output:\n${off.log().slice(-2000)}`);
  });
  for (const p of stack.processes) {
    void p.whenExited.then((e) => {
      if (!stopping) void fail(`${p.name} (pid ${p.pid}) exited unexpectedly (${describeExit(e)})`);
    });
  }

  const file: LocalStackFile = {
    redisUrls: stack.redisUrls,
    dynamodbEndpoint: stack.dynamodbEndpoint,
    tableName: stack.tableName,
    baseUrl: offline.baseUrl,
    lambdaEndpoint,
    pid: process.pid,
  };
  writeFileSync(STACK_FILE, JSON.stringify(file, null, 2) + '\n');
  wroteStackFile = true;

  sweepTimer = setInterval(() => {
    invokeLocal(lambdaEndpoint, 'sweep').then(
      (result) => console.log(`sweep: ${JSON.stringify(result)}`),
      (err: unknown) => console.error(`sweep failed: ${err instanceof Error ? err.message : String(err)}`),
    );
  }, SWEEP_EVERY_MS);

  console.log(`
session-lineage is running at ${offline.baseUrl}  (Lambda invoke API at ${lambdaEndpoint}, serverless-offline pid ${offline.pid})
stack file: ${STACK_FILE}
SessionCompacted events (JSON lines): ${offline.eventsFile}
dev API key (tenant "${DEV_TENANT}"):
  ${key}

try it:
  curl -s -X POST ${offline.baseUrl}/sessions -H 'authorization: Bearer ${key}' -H 'content-type: application/json' -d '{"source":"curl"}'

more keys: npm run cli -- keys create --tenant <name>
Ctrl-C stops everything.`);
} catch (err) {
  await fail(err instanceof Error ? err.message : String(err));
}
