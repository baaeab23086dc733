// `npm start` as a user runs it (issue 24), through npm, as its own process group like a terminal's
// foreground job, with its own Redis nodes and DynamoDB Local (the suite's stack variables removed):
// data written before a Ctrl-C is there after the restart; Ctrl-C and SIGTERM stop every process,
// remove the stack file and the temp folders and print "stopped."; one Redis node killed is one log
// line naming it and the restart command while compress still answers `compressed`; two killed give
// 503 lease_unavailable with Retry-After; `npm run stack -- restart` brings a node back.
// Two starts in all (each is a JVM, three redis-servers, a build and serverless-offline).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../../infra/build.js';
import { freePort } from '../../../infra/local/processes.js';
import type { LocalStackFile } from '../../../infra/local/stack-file.js';
import { apiClient } from '../http/api-client.js';
import { appendAll, createSession, readAll, turns } from '../http/session-helpers.js';

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface Started {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Promise<Exit>;
  key: string;
  baseUrl: string;
  stackFile: LocalStackFile;
}

const work = mkdtempSync(join(tmpdir(), 'npm-start-e2e-'));
const dataDir = join(work, 'data');
const stackFilePath = join(work, 'stack.json');
/** npm start's TMPDIR: whatever temp folder it (or serverless-offline) makes lands here. */
const childTmp = join(work, 'tmp');
mkdirSync(childTmp);
let ports: { http: number; lambda: number };
/** Runs not yet exited, with their output (for the pids they printed). */
const running = new Map<ChildProcess, () => string>();
/** How npm start prints the pid of each process it started. */
const PID = /(?:\(|serverless-offline )pid (\d+)\)/g;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function npmStart(args: string[] = []): Promise<Started> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const v of ['REDIS_URLS', 'DYNAMODB_ENDPOINT', 'TABLE_NAME']) delete env[v];
  Object.assign(env, {
    HTTP_PORT: String(ports.http),
    LAMBDA_PORT: String(ports.lambda),
    LOCAL_STACK_FILE: stackFilePath,
    LOCAL_DATA_DIR: dataDir,
    TMPDIR: childTmp,
  });
  // detached: its own process group, so a group signal reaches npm, tsx and npm start at once, as Ctrl-C does.
  const child = spawn('npm', ['start', ...(args.length ? ['--', ...args] : [])], {
    cwd: projectRoot,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  running.set(child, () => out);
  child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  // 'close': npm, tsx and npm start (every holder of the pipes) have exited, not only npm.
  const exited = new Promise<Exit>((resolve) =>
    child.once('close', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  const deadline = Date.now() + 240_000;
  while (!out.includes('Ctrl-C stops everything.')) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`npm start exited ${child.exitCode ?? child.signalCode}\n${out}\n${err}`);
    if (Date.now() > deadline) throw new Error(`npm start did not come up\n${out}\n${err}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const key = /dev API key \(tenant "dev"[^)]*\):\n\s+(\S+)/.exec(out)![1]!;
  const stackFile = JSON.parse(readFileSync(stackFilePath, 'utf8')) as LocalStackFile;
  return { child, out: () => out, err: () => err, exited, key, baseUrl: stackFile.baseUrl, stackFile };
}

/** Every pid npm start printed as started, plus serverless-offline's. */
function childPids(s: Started): number[] {
  const pids = [...s.out().matchAll(PID)].map((m) => Number(m[1]));
  expect(pids.length).toBeGreaterThanOrEqual(5); // 3 redis, DynamoDB Local, serverless-offline
  return pids;
}

async function expectCleanStop(s: Started, signal: NodeJS.Signals): Promise<void> {
  const pids = childPids(s);
  process.kill(-s.child.pid!, signal);
  const exit = await s.exited;
  // npm start exits 0; npm itself, which got the same group signal, may end by re-raising it, as shells expect.
  expect([
    { code: 0, signal: null },
    { code: null, signal },
  ]).toContainEqual(exit);
  expect(s.out()).toMatch(/\nstopped\.\n$/);
  expect(s.err()).not.toContain('npm start failed');
  expect(existsSync(stackFilePath)).toBe(false);
  // Ours (the events file's folder) are gone; tsx's and Node's compile caches are meant to stay for the next run.
  expect(readdirSync(childTmp).filter((f) => f !== 'node-compile-cache' && !/^tsx-\d+$/.test(f))).toEqual([]);
  for (const pid of pids) expect(isAlive(pid), `pid ${pid} still running`).toBe(false);
  await expect(fetch(`${s.baseUrl}/sessions`, { signal: AbortSignal.timeout(2000) })).rejects.toThrow();
}

function runNpm(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('npm', args, {
    cwd: projectRoot,
    env: { ...process.env, LOCAL_STACK_FILE: stackFilePath },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

beforeAll(async () => {
  ports = { http: await freePort(), lambda: await freePort() };
});

afterAll(async () => {
  // A failed test may leave a run up: stop it the way a user would, and kill what is left after that.
  const signal = (pid: number, sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  };
  for (const [c, out] of running) {
    if (c.pid) {
      signal(-c.pid, 'SIGTERM');
      await Promise.race([new Promise((r) => c.once('close', r)), new Promise((r) => setTimeout(r, 30_000))]);
      signal(-c.pid, 'SIGKILL');
    }
    for (const m of out().matchAll(PID)) signal(Number(m[1]), 'SIGKILL');
  }
  rmSync(work, { recursive: true, force: true });
}, 60_000);

describe('npm start (issue 24)', () => {
  let second: Started;
  const sessionItems = turns(0, 4);
  let sessionId: string;

  it('--fresh deletes the local data; Ctrl-C (SIGINT to the process group) stops everything, leaves no file, prints "stopped."', async () => {
    const marker = join(dataDir, 'dynamodb', 'left-from-an-earlier-run');
    mkdirSync(join(dataDir, 'dynamodb'), { recursive: true });
    writeFileSync(marker, 'x');
    const first = await npmStart(['--fresh']);
    expect(first.out()).toContain(`--fresh: deleted the local data in ${dataDir}`);
    expect(existsSync(marker)).toBe(false);
    expect(first.out()).toContain('sweep: every 1 minute');
    const api = apiClient(first.baseUrl, first.key);
    sessionId = await createSession(api, { source: 'before-restart' });
    await appendAll(api, sessionId, sessionItems);
    await expectCleanStop(first, 'SIGINT');
  }, 300_000);

  it('keeps the data across the restart: the same dev key, the session and its items', async () => {
    second = await npmStart();
    expect(second.out()).toContain('dev API key (tenant "dev", same as last run)');
    const api = apiClient(second.baseUrl, second.key);
    const got = await api('GET', `/sessions/${sessionId}`);
    expect(got.status).toBe(200);
    expect(got.body.session).toMatchObject({ sessionId, source: 'before-restart', messageCount: sessionItems.length });
    expect(await readAll(api, sessionId)).toEqual(sessionItems);
  }, 300_000);

  it('one Redis node killed: one log line naming it and the restart command, and compress still answers compressed', async () => {
    const api = apiClient(second.baseUrl, second.key);
    const [a] = second.stackFile.redisNodes!;
    process.kill(a!.pid, 'SIGKILL');
    const line = `redis node ${a!.name} (pid ${a!.pid}) died (killed by SIGKILL)`;
    await expect.poll(() => second.err(), { timeout: 10_000 }).toContain(line);
    expect(
      second
        .err()
        .split('\n')
        .filter((l) => l.includes(a!.name)),
    ).toEqual([`${line}; leases still work on 2 of 3 nodes; restart it: npm run stack -- restart ${a!.name}`]);
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 6));
    const res = await api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(res.body).toMatchObject({ outcome: 'compressed', previousSessionId: id });
  }, 120_000);

  it('two killed: 503 lease_unavailable with Retry-After (not a refused connection); npm run stack -- restart brings compress back', async () => {
    const api = apiClient(second.baseUrl, second.key);
    const [a, b] = second.stackFile.redisNodes!;
    process.kill(b!.pid, 'SIGKILL');
    await expect.poll(() => second.err(), { timeout: 10_000 }).toContain(`redis node ${b!.name} (pid ${b!.pid}) died`);
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 6));
    const refused = await api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: { code: 'lease_unavailable' } });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);

    const restarted = await runNpm(['run', '-s', 'stack', '--', 'restart', a!.name]);
    expect(restarted.stderr).toBe('');
    expect(restarted.code).toBe(0);
    expect(restarted.stdout).toMatch(new RegExp(`^restarted ${a!.name} \\(pid \\d+\\)`));
    // A live node is refused, naming it.
    const again = await runNpm(['run', '-s', 'stack', '--', 'restart', a!.name]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`${a!.name} (pid`);
    expect(again.stderr).toContain('is running');
    // ioredis reconnects on its retry schedule (at most 1 s apart).
    await expect
      .poll(async () => (await api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } })).body.outcome, {
        timeout: 15_000,
        interval: 500,
      })
      .toBe('compressed');
  }, 120_000);

  it('SIGTERM stops it the same way', async () => {
    await expectCleanStop(second, 'SIGTERM');
  }, 120_000);
});
