// `npm run example:python` (CI): the Python client's example agent (lib/client-python/examples/agent.py)
// against a service of its own: a local stack (3 Redis nodes, DynamoDB Local) and the built
// functions under serverless-offline on free ports, as smoke.ts starts them. The example runs
// from the package's sources (standard library only, so nothing to install) with
// LINEAGE_BASE_URL / LINEAGE_API_KEY set; everything started here is stopped, whatever happened.
//
// `npm run example:python -- <command...>` runs that command instead, in the same environment
// (plus LINEAGE_API_KEY_OTHER, a second tenant's key), e.g. pytest while working on the client.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { buildFunctions, projectRoot } from '../build.js';
import { ApiKeyStore } from '../../lib/api/api-keys.js';
import { createDynamoClient } from '../../lib/aws-clients.js';
import { startOffline, type OfflineProcess } from '../local/offline.js';
import { freePort } from '../local/processes.js';
import { findPython } from '../local/python.js';
import { startLocalStack, stackEnv, type LocalStack } from '../local/stack.js';

const PACKAGE_DIR = join(projectRoot, 'lib', 'client-python');

function runCommand(argv: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: 'inherit', env: { ...process.env, ...env } });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

let stack: LocalStack | undefined;
let offline: OfflineProcess | undefined;
let code = 0;
try {
  let argv = process.argv.slice(2);
  if (argv[0] === '--') argv = argv.slice(1);
  if (argv.length === 0) {
    const found = await findPython();
    if ('missing' in found) throw new Error(`no Python 3.11+ to run the example (${found.missing})`);
    argv = [found.python, join(PACKAGE_DIR, 'examples', 'agent.py')];
  }
  // Own servers, never whatever REDIS_URLS / DYNAMODB_ENDPOINT the shell points at.
  stack = await startLocalStack({ redisNodes: 3, tableName: 'session-lineage-python-smoke', env: {} });
  await buildFunctions();
  const [httpPort, lambdaPort] = await Promise.all([freePort(), freePort()]);
  offline = await startOffline({ httpPort, lambdaPort, env: { ...stackEnv(stack), LOCAL_LAMBDA_ENDPOINT: '' }, output: 'pipe' });
  const ddb = createDynamoClient({ endpoint: stack.dynamodbEndpoint, maxAttempts: 3 });
  const keys = new ApiKeyStore({ client: ddb, tableName: stack.tableName });
  const [{ key }, { key: other }] = await Promise.all([keys.create('python-example'), keys.create('python-example-other')]);
  ddb.destroy();
  code = await runCommand(argv, {
    LINEAGE_BASE_URL: offline.baseUrl,
    LINEAGE_API_KEY: key,
    LINEAGE_API_KEY_OTHER: other,
    PYTHONPATH: [join(PACKAGE_DIR, 'src'), process.env.PYTHONPATH].filter(Boolean).join(':'),
  });
  if (code !== 0) {
    console.error(`example:python: ${argv.join(' ')} exited with ${code}`);
    console.error(offline.log().slice(-3000));
  }
} catch (err) {
  console.error(`example:python FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  if (offline) console.error(offline.log().slice(-3000));
  code = 1;
} finally {
  await offline?.stop().catch((err: unknown) => console.error('serverless offline:', err));
  await stack?.stop().catch((err: unknown) => console.error('local stack:', err));
}
process.exit(code);
