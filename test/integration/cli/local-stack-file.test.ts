// How the CLI finds the local stack (issue 24): `npm run -s cli -- ... --json` (the README's form)
// prints JSON alone on stdout, so it parses; a stack file left by an npm start that is gone (killed:
// its pid is dead) is named as stale instead of a connection error, for `npm run cli` and for
// `npm run stack -- restart`; the CLI runs from its esbuild bundle and rebuilds it when a source changed.
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../../infra/build.js';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { createDynamoClient } from '../../../lib/aws-clients.js';
import { cli, testStackFile } from '../../support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'cli-stack-file-'));
/** Where infra/cli/launch.ts keeps the bundle (importing it would run the CLI). */
const CLI_BUNDLE_DIR = join(projectRoot, 'node_modules', '.cache', 'session-lineage-cli');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The pid of a process that has exited (as a killed `npm start` leaves in its stack file). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  return r.pid;
}

function npm(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('npm', args, { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** A stack file at its own path, and an environment that finds the stack only through it. */
function withStackFile(contents: object): NodeJS.ProcessEnv {
  const file = join(dir, `${randomUUID()}.json`);
  writeFileSync(file, JSON.stringify(contents));
  const env: NodeJS.ProcessEnv = { ...process.env, LOCAL_STACK_FILE: file };
  for (const v of ['REDIS_URLS', 'DYNAMODB_ENDPOINT', 'TABLE_NAME']) delete env[v];
  return env;
}

describe('the CLI and the local stack file', () => {
  it('`npm run -s cli -- keys list --json` (as the README shows it) prints only JSON on stdout', async () => {
    const client = createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT });
    const tenant = `t-${randomUUID().slice(0, 8)}`;
    const { keyId } = await new ApiKeyStore({ client, tableName: process.env.TABLE_NAME! }).create(tenant);
    client.destroy();
    const env = withStackFile(testStackFile());
    const run = await npm(['run', '-s', 'cli', '--', 'keys', 'list', '--tenant', tenant, '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([{ keyId, tenantId: tenant, createdAt: expect.any(String) }]);
  }, 60_000);

  it('names a stale stack file (its npm start is not running) instead of failing to connect', async () => {
    const pid = deadPid();
    const file = join(dir, 'stale.json');
    writeFileSync(file, JSON.stringify(testStackFile({ pid })));
    const run = await cli(['keys', 'list'], { env: { LOCAL_STACK_FILE: file, REDIS_URLS: '', DYNAMODB_ENDPOINT: '', TABLE_NAME: '' } });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `error: no local stack is running: ${file} is stale (its npm start, pid ${pid}, is not running); ` +
        'run `npm start` again (it replaces the file), or delete the file\n',
    );
    // The same file with a live pid is used as is (the suite's own DynamoDB Local answers).
    writeFileSync(file, JSON.stringify(testStackFile({ pid: process.pid })));
    const live = await cli(['keys', 'list', '--json'], {
      env: { LOCAL_STACK_FILE: file, REDIS_URLS: '', DYNAMODB_ENDPOINT: '', TABLE_NAME: '' },
    });
    expect(live.code, live.stderr).toBe(0);
    expect(JSON.parse(live.stdout)).toBeInstanceOf(Array);
  }, 60_000);

  it('`npm run stack -- restart` names a stale stack file too, and a missing one', async () => {
    const pid = deadPid();
    const stale = await npm(['run', '-s', 'stack', '--', 'restart', 'redis:1'], withStackFile(testStackFile({ pid })));
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain(`is stale (its npm start, pid ${pid}, is not running)`);
    const missing = await npm(['run', '-s', 'stack', '--', 'restart', 'redis:1'], {
      ...process.env,
      LOCAL_STACK_FILE: join(dir, 'none.json'),
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('run `npm start` first');
  }, 60_000);

  it('issue 34: from its bundle under node_modules/.cache, the CLI looks for the stack file in the project (infra/local/)', async () => {
    const projectFile = join(projectRoot, 'infra', 'local', '.local-stack.json');
    // A developer's running npm start owns that file: then this check has nothing to prove.
    if (existsSync(projectFile)) return;
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const v of ['LOCAL_STACK_FILE', 'REDIS_URLS', 'DYNAMODB_ENDPOINT', 'TABLE_NAME']) delete env[v];
    const run = await npm(['run', '-s', 'cli', '--', 'keys', 'list'], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`run \`npm start\` first (it writes ${projectFile})`);
  }, 60_000);

  it('issue 34: while npm start is still starting (its marker, a live pid) the CLI waits for the stack, saying so', async () => {
    const file = join(dir, 'starting.json');
    writeFileSync(file, JSON.stringify({ starting: true, pid: process.pid }));
    const env = { LOCAL_STACK_FILE: file, REDIS_URLS: '', DYNAMODB_ENDPOINT: '', TABLE_NAME: '' };
    const child = spawn(process.execPath, ['infra/cli/launch.ts', 'keys', 'list', '--json'], {
      cwd: projectRoot,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const code = new Promise<number | null>((resolve) => child.once('close', resolve));
    // Once the CLI says it waits, the stack comes up (npm start replaces its marker with the full file).
    while (!stderr.includes('still starting') && child.exitCode === null) await new Promise((r) => setTimeout(r, 100));
    expect(stderr).toContain(`note: npm start (pid ${process.pid}) is still starting; waiting for it`);
    writeFileSync(file, JSON.stringify(testStackFile()));
    expect(await code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toBeInstanceOf(Array);
    // A marker whose npm start is gone is stale, not a wait.
    const pid = deadPid();
    writeFileSync(file, JSON.stringify({ starting: true, pid }));
    const stale = await cli(['keys', 'list'], { env });
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain(`is stale (its npm start, pid ${pid}, is not running)`);
  }, 60_000);

  it('runs from its bundle, rebuilt only when a file it was built from changed', async () => {
    const bundle = join(CLI_BUNDLE_DIR, 'cli.mjs');
    expect((await cli(['--help'])).code).toBe(0);
    const built = statSync(bundle).mtimeMs;
    expect((await cli(['--help'])).code).toBe(0);
    expect(statSync(bundle).mtimeMs).toBe(built);
    // Pretend a source was edited after the build: the stamp's build time moves before its inputs.
    const stampFile = join(CLI_BUNDLE_DIR, 'inputs.json');
    const stamp = JSON.parse(readFileSync(stampFile, 'utf8')) as { builtFrom: number; inputs: string[] };
    expect(stamp.inputs).toContain('infra/cli/main.ts');
    writeFileSync(stampFile, JSON.stringify({ ...stamp, builtFrom: 0 }));
    expect((await cli(['--help'])).code).toBe(0);
    expect(statSync(bundle).mtimeMs).toBeGreaterThan(built);
  }, 60_000);
});
