// `npm start` fails loudly (issue 14): a taken port is refused before anything starts, naming the
// port; serverless-offline's own EADDRINUSE is reported at once; readiness means OUR API answered;
// and a serverless-offline that dies after start takes the whole service down with exit code 1.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { projectRoot } from '../../../infra/build.js';
import { PortInUseError, startOffline } from '../../../infra/local/offline.js';
import { freePort } from '../../../infra/local/processes.js';

const tsx = join(projectRoot, 'node_modules', '.bin', 'tsx');
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** An HTTP server that is not ours (answers 200 to anything), as whatever else might hold port 3000. */
async function foreignServer(): Promise<{ port: number; server: Server }> {
  const port = await freePort();
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('some other app'));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port, server };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `npm start`'s entry point with extra env; `until` may act on the live process (e.g. kill a child). */
function npmStart(env: Record<string, string>, until?: (out: () => string, child: ReturnType<typeof spawn>) => void): Promise<Run> {
  const stackDir = mkdtempSync(join(tmpdir(), 'npm-start-test-'));
  cleanups.push(() => rmSync(stackDir, { recursive: true, force: true }));
  const child = spawn(tsx, ['infra/local/start.ts'], {
    cwd: projectRoot,
    env: { ...process.env, LOCAL_STACK_FILE: join(stackDir, 'stack.json'), LOCAL_DATA_DIR: join(stackDir, 'data'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString('utf8');
    until?.(() => stdout, child);
  });
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('npm start', () => {
  it.each([
    ['HTTP_PORT', 'HTTP API'],
    ['LAMBDA_PORT', 'Lambda invoke API'],
  ])('refuses to start when %s is taken: exit 1, the port named, nothing started', async (variable, what) => {
    const taken = await foreignServer();
    const other = String(await freePort());
    const env =
      variable === 'HTTP_PORT'
        ? { HTTP_PORT: String(taken.port), LAMBDA_PORT: other }
        : { HTTP_PORT: other, LAMBDA_PORT: String(taken.port) };
    const started = Date.now();
    const run = await npmStart(env);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`port ${taken.port} (${what}`);
    expect(run.stderr).toContain('already in use');
    expect(run.stdout).not.toContain('is running');
    expect(run.stdout).not.toContain('starting local stack');
    // Refused before Java or Redis were started, so it is quick even on a loaded machine.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("reports serverless-offline's EADDRINUSE at once, naming the port; another server's answer is not readiness", async () => {
    const taken = await foreignServer();
    const started = Date.now();
    const err = await startOffline({ httpPort: taken.port, lambdaPort: await freePort(), env: {}, readyTimeoutMs: 60_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PortInUseError);
    expect((err as PortInUseError).port).toBe(taken.port);
    expect((err as Error).message).toMatch(new RegExp(`port ${taken.port} \\(serverless-offline HTTP API\\) is already in use`));
    expect(Date.now() - started).toBeLessThan(45_000);
  });

  it('exits 1 and stops everything when serverless-offline dies after start', async () => {
    // Reuses the suite's Redis nodes and DynamoDB Local (REDIS_URLS / DYNAMODB_ENDPOINT in env),
    // so only the bundles and serverless-offline are started here.
    const [httpPort, lambdaPort] = [await freePort(), await freePort()];
    let offlinePid: number | undefined;
    let answered: { status: number; body: unknown } | undefined;
    const run = await npmStart({ HTTP_PORT: String(httpPort), LAMBDA_PORT: String(lambdaPort) }, (out) => {
      const m = /serverless-offline pid (\d+)\)/.exec(out());
      if (!m || offlinePid !== undefined) return;
      offlinePid = Number(m[1]);
      const pid = offlinePid;
      // "running" was printed: our API must already answer an unauthenticated request with its 401.
      void fetch(`http://127.0.0.1:${httpPort}/sessions`)
        .then(async (res) => (answered = { status: res.status, body: await res.json() }))
        .finally(() => process.kill(pid, 'SIGKILL'));
    });
    expect(answered).toMatchObject({ status: 401, body: { error: { code: 'unauthorized' } } });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`serverless offline (pid ${offlinePid}) exited unexpectedly (killed by SIGKILL)`);
    expect(run.stdout).toContain('stopped.');
    // The HTTP port is free again: nothing was left behind.
    await expect(fetch(`http://127.0.0.1:${httpPort}/sessions`, { signal: AbortSignal.timeout(1000) })).rejects.toThrow();
  }, 180_000);
});
