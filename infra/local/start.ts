// `npm start`: the whole service on this machine. Starts the local stack (3 Redis nodes,
// DynamoDB Local, the table), creates a dev API key, writes infra/local/.local-stack.json
// for the CLI, builds the bundles, runs them under serverless-offline (HTTP on :3000,
// Lambda invoke on :3002), runs the sweep every minute, and on Ctrl-C / SIGTERM stops
// every process it started, by PID.
import { rmSync, writeFileSync } from 'node:fs';
import { buildFunctions } from '../build.js';
import { ApiKeyStore } from '../../lib/api/api-keys.js';
import { createDynamoClient } from '../../lib/clients.js';
import { invokeLocal, startOffline, type OfflineProcess } from './offline.js';
import { LOCAL_STACK_FILE, type LocalStackFile } from './stack-file.js';
import { startLocalStack, stackEnv, type LocalStack } from './stack.js';

const HTTP_PORT = Number(process.env.HTTP_PORT ?? 3000);
const LAMBDA_PORT = Number(process.env.LAMBDA_PORT ?? 3002);
const SWEEP_EVERY_MS = 60_000;
const DEV_TENANT = process.env.DEV_TENANT ?? 'dev';

let stack: LocalStack | undefined;
let offline: OfflineProcess | undefined;
let sweepTimer: NodeJS.Timeout | undefined;
let stopping = false;

async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    console.log('\nstopping local service...');
    if (sweepTimer) clearInterval(sweepTimer);
    await offline?.stop().catch((err: unknown) => console.error('serverless offline:', err));
    await stack?.stop().catch((err: unknown) => console.error('local stack:', err));
    rmSync(LOCAL_STACK_FILE, { force: true });
    console.log('stopped.');
  }
  process.exit(code);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

try {
  console.log('starting local stack (3 Redis nodes, DynamoDB Local)...');
  stack = await startLocalStack({ redisNodes: 3 });
  for (const p of stack.processes) console.log(`  started ${p.name} (pid ${p.pid})`);
  const env = stackEnv(stack);

  const ddb = createDynamoClient({ endpoint: stack.dynamodbEndpoint, maxAttempts: 3 });
  const { key } = await new ApiKeyStore({ client: ddb, tableName: stack.tableName }).create(DEV_TENANT);
  ddb.destroy();

  const baseUrl = `http://127.0.0.1:${HTTP_PORT}`;
  const lambdaEndpoint = `http://127.0.0.1:${LAMBDA_PORT}`;
  const file: LocalStackFile = {
    redisUrls: stack.redisUrls,
    dynamodbEndpoint: stack.dynamodbEndpoint,
    tableName: stack.tableName,
    baseUrl,
    lambdaEndpoint,
    pid: process.pid,
  };
  writeFileSync(LOCAL_STACK_FILE, JSON.stringify(file, null, 2) + '\n');

  console.log('building functions...');
  for (const b of await buildFunctions()) console.log(`  ${b.name}: ${(b.bytes / 1024 / 1024).toFixed(2)} MB`);

  console.log('starting serverless offline...');
  offline = await startOffline({
    httpPort: HTTP_PORT,
    lambdaPort: LAMBDA_PORT,
    env: { ...env, LOCAL_LAMBDA_ENDPOINT: lambdaEndpoint },
    output: 'inherit',
  });

  sweepTimer = setInterval(() => {
    invokeLocal(lambdaEndpoint, 'sweep').then(
      (result) => console.log(`sweep: ${JSON.stringify(result)}`),
      (err: unknown) => console.error(`sweep failed: ${err instanceof Error ? err.message : String(err)}`),
    );
  }, SWEEP_EVERY_MS);

  console.log(`
session-lineage is running at ${baseUrl}  (Lambda invoke API at ${lambdaEndpoint}, serverless-offline pid ${offline.pid})
stack file: ${LOCAL_STACK_FILE}
dev API key (tenant "${DEV_TENANT}"):
  ${key}

try it:
  curl -s -X POST ${baseUrl}/sessions -H 'authorization: Bearer ${key}' -H 'content-type: application/json' -d '{"source":"curl"}'

more keys: npm run cli -- keys create --tenant <name>
Ctrl-C stops everything.`);
} catch (err) {
  console.error(`npm start failed: ${err instanceof Error ? err.message : String(err)}`);
  await shutdown(1);
}
