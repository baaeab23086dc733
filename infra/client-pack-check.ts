// `npm run client:pack-check` (CI): @session-lineage/client as a new user gets it. Packs the
// workspace (prepack builds it), installs the tarball into a scratch project in a temp folder,
// type-checks that project with the strictest consumer flags (skipLibCheck off, so our .d.ts are
// checked too), first without @openai/agents-core (an optional peer: the main entry must not
// need it), then with it for the ./agents entry. Then plain `node` imports the package and makes
// calls against a local stack this script starts and stops itself.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ApiKeyStore } from '../lib/api/api-keys.js';
import { createDynamoClient } from '../lib/aws-clients.js';
import { buildFunctions } from './build.js';
import { startOffline, type OfflineProcess } from './local/offline.js';
import { freePort } from './local/processes.js';
import { startLocalStack, stackEnv, type LocalStack } from './local/stack.js';

const exec = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const rootPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const tsc = join(root, 'node_modules/typescript/bin/tsc');

async function sh(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  try {
    return (await exec(cmd, args, { cwd, env, maxBuffer: 16 << 20 })).stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}:\n${e.stdout ?? ''}${e.stderr ?? e.message}`);
  }
}

const log = (line: string) => console.log(`client:pack-check: ${line}`);

/** Runs tsc on the project; fails on any error except in files `tolerated` names. Returns how many errors those had. */
async function typeCheck(project: string, tolerated: (file: string) => boolean): Promise<number> {
  const r = await exec(process.execPath, [tsc, '-p', project, '--pretty', 'false'], { cwd: project }).then(
    (ok) => ok.stdout,
    (err: { stdout?: string; message?: string }) => err.stdout ?? err.message ?? 'tsc failed',
  );
  const errors = r.split('\n').filter((l) => / error TS\d+:/.test(l));
  const ours = errors.filter((l) => !tolerated(l.slice(0, l.indexOf('('))));
  if (ours.length > 0 || (errors.length === 0 && r.trim() !== '')) throw new Error(`tsc -p ${project}:\n${r}`);
  if (errors.length > 0) log(`tolerated: ${errors.join(' | ').slice(0, 400)}`);
  return errors.length;
}

// What a strict consumer turns on. skipLibCheck off: the package's own .d.ts must pass these too.
const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['ES2023'],
    types: ['node'],
    strict: true,
    exactOptionalPropertyTypes: true,
    noPropertyAccessFromIndexSignature: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: false,
    noEmit: true,
  },
};

// Uses the main entry only: the client, a typed error, an optional field left out (exactOptionalPropertyTypes).
const MAIN_TS = `import { LineageClient, SessionEndedError, UnsupportedValueError, type AppendOptions, type Item, type Session } from '@session-lineage/client';

export async function firstCall(baseUrl: string, apiKey: string): Promise<Session> {
  const client = new LineageClient({ baseUrl, apiKey, timeoutMs: 5_000 });
  const s = await client.createSession({ format: 'responses', source: 'pack-check' });
  const items: Item[] = [{ type: 'message', role: 'user', content: 'hello from a packed client' }];
  const opts: AppendOptions = { followRotation: true };
  try {
    return (await client.append(s.sessionId, items, opts)).session;
  } catch (err) {
    if (err instanceof SessionEndedError) throw new Error(\`rotated to \${err.liveSessionId ?? 'nothing'}\`);
    if (err instanceof UnsupportedValueError) throw new Error(err.path);
    throw err;
  }
}
`;

// The ./agents entry against the SDK's own Session interfaces.
const AGENTS_TS = `import type { OpenAIResponsesCompactionAwareSession, Session } from '@openai/agents-core';
import { LineageClient } from '@session-lineage/client';
import { LineageSession, type LineageSessionEvent } from '@session-lineage/client/agents';

export function sessionFor(baseUrl: string, apiKey: string, onEvent: (e: LineageSessionEvent) => void): Session {
  const session: OpenAIResponsesCompactionAwareSession = new LineageSession({
    client: new LineageClient({ baseUrl, apiKey }),
    sessionId: 'user_123',
    source: 'pack-check',
    compaction: { mode: 'rotate' },
    onEvent,
  });
  return session;
}
`;

// Plain node, no TypeScript: what the packed JavaScript does against the service.
const CALL_MJS = `import { LineageClient } from '@session-lineage/client';
import { LineageSession } from '@session-lineage/client/agents';
const client = new LineageClient({ baseUrl: process.env.LINEAGE_BASE_URL, apiKey: process.env.LINEAGE_API_KEY });
const session = new LineageSession({ client, sessionId: 'pack-check_user@1', source: 'pack-check' });
await session.addItems([{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'packed hello' }] }]);
const items = await session.getItems();
const id = await session.getSessionId();
const stored = await client.getConversation(id);
let refused = '';
try { await session.addItems([{ type: 'message', role: 'user', content: 'x', providerData: { bytes: new Uint16Array([1]) } }]); }
catch (err) { refused = err.name; }
let badId = '';
try { new LineageSession({ client, sessionId: 'not an id' }); } catch (err) { badId = err.name; }
console.log(JSON.stringify({ id, items, format: stored.format, messageCount: stored.messageCount, refused, badId }));
`;

let stack: LocalStack | undefined;
let offline: OfflineProcess | undefined;
const dir = mkdtempSync(join(tmpdir(), 'client-pack-check-'));
let code = 0;
try {
  // 1. Pack: prepack builds dist/ (tsc), `files` decides what goes in.
  const packed = JSON.parse(
    await sh(npm, ['pack', '--json', '--workspace', '@session-lineage/client', '--pack-destination', dir], root),
  ) as { filename: string; files: { path: string }[] }[];
  const tarball = join(dir, packed[0]!.filename);
  const files = packed[0]!.files.map((f) => f.path).sort();
  const stray = files.filter((f) => !(f === 'package.json' || f === 'README.md' || /^dist\/.+\.(js|d\.ts)$/.test(f)));
  if (stray.length > 0) throw new Error(`the tarball holds files outside dist/*.js, dist/*.d.ts and README.md: ${stray.join(', ')}`);
  if (!files.includes('dist/index.js') || !files.includes('dist/agents.d.ts'))
    throw new Error(`the tarball lacks its build: ${files.join(', ')}`);
  log(`packed ${packed[0]!.filename}: ${files.length} files`);

  // 2. A scratch project: the tarball and Node's types only.
  const app = join(dir, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'pack-check-app', private: true, type: 'module' }, null, 2));
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, files: ['main.ts'] }, null, 2));
  writeFileSync(join(app, 'main.ts'), MAIN_TS);
  const install = ['install', '--no-audit', '--no-fund', '--prefer-offline', '--save-exact'];
  await sh(npm, [...install, tarball, `@types/node@${rootPkg.devDependencies['@types/node']}`], app);
  const installed = readdirSync(join(app, 'node_modules')).filter((n) => !n.startsWith('.'));
  if (existsSync(join(app, 'node_modules/@openai/agents-core'))) throw new Error('installing the client pulled in @openai/agents-core');
  log(`installed: ${installed.join(', ')}`);
  await typeCheck(app, () => false);
  log('main entry type-checks strictly without @openai/agents-core');

  // 3. With the SDK (the optional peer), the ./agents entry against its Session types.
  await sh(npm, [...install, `@openai/agents-core@${rootPkg.dependencies['@openai/agents-core']}`], app);
  writeFileSync(join(app, 'agents.ts'), AGENTS_TS);
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, files: ['main.ts', 'agents.ts'] }, null, 2));
  // The SDK's own .d.ts do not pass exactOptionalPropertyTypes (its result.d.ts, 0.20.0); with
  // skipLibCheck off those errors are counted and shown, and every other error fails the check.
  const sdkErrors = await typeCheck(app, (file) => file.startsWith('node_modules/@openai/'));
  log(`./agents type-checks strictly against @openai/agents-core (${sdkErrors} error(s) inside the SDK's own .d.ts, not ours)`);

  // 4. A local stack of our own, and plain node importing the installed package.
  stack = await startLocalStack({ redisNodes: 1, tableName: 'session-lineage-pack-check', env: {} });
  await buildFunctions();
  const [httpPort, lambdaPort] = await Promise.all([freePort(), freePort()]);
  offline = await startOffline({ httpPort, lambdaPort, env: { ...stackEnv(stack), LOCAL_LAMBDA_ENDPOINT: '' }, output: 'pipe' });
  const ddb = createDynamoClient({ endpoint: stack.dynamodbEndpoint, maxAttempts: 3 });
  const { key } = await new ApiKeyStore({ client: ddb, tableName: stack.tableName }).create('pack-check');
  ddb.destroy();
  writeFileSync(join(app, 'call.mjs'), CALL_MJS);
  const out = await sh(process.execPath, ['call.mjs'], app, { ...process.env, LINEAGE_BASE_URL: offline.baseUrl, LINEAGE_API_KEY: key });
  const r = JSON.parse(out) as { id: string; items: unknown[]; format: string; messageCount: number; refused: string; badId: string };
  const want = JSON.stringify([{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'packed hello' }] }]);
  const ok =
    r.id === 'pack-check_user@1' &&
    JSON.stringify(r.items) === want &&
    r.format === 'responses' &&
    r.messageCount === 1 &&
    r.refused === 'UnsupportedValueError' &&
    r.badId === 'TypeError';
  if (!ok) throw new Error(`the packed client under plain node answered ${out}`);
  log(
    `plain node: appended and read back 1 item on the "responses" conversation ${r.id} at ${offline.baseUrl}; binary other than Uint8Array and a bad id refused`,
  );
  log('passed');
} catch (err) {
  console.error(`client:pack-check FAILED: ${err instanceof Error ? err.message : String(err)}`);
  if (offline) console.error(offline.log().slice(-3000));
  code = 1;
} finally {
  await offline?.stop().catch((err: unknown) => console.error('serverless offline:', err));
  await stack?.stop().catch((err: unknown) => console.error('local stack:', err));
  rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
