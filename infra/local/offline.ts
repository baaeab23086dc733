// Runs the built functions under serverless-offline (stage `local`) against a local
// stack. Shared by `npm start` and test/support/local-service.ts.
//
// Started means OUR service answered: an unauthenticated GET /sessions must come back as the
// API's own 401 JSON error, not just any HTTP answer (another server on the port would pass
// that test). serverless-offline's output is always read, so a failed listen (EADDRINUSE) is
// reported at once with the port it names, instead of waiting out the readiness timeout.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../build.js';
import type { ProcessExit } from './processes.js';

export const SERVICE_NAME = 'session-lineage';
export const LOCAL_STAGE = 'local';

export interface OfflineOptions {
  httpPort: number;
  lambdaPort: number;
  /** Environment for the functions (REDIS_URLS, DYNAMODB_ENDPOINT, TABLE_NAME, ...). */
  env: Record<string, string | undefined>;
  /** 'inherit': also echo serverless-offline's output here; otherwise it is only kept (see log()). */
  output?: 'inherit' | 'ignore' | 'pipe';
  readyTimeoutMs?: number;
  /** Own process group (see processes.ts RedisOptions.detached). */
  detached?: boolean;
}

export interface OfflineProcess {
  readonly pid: number;
  readonly baseUrl: string;
  readonly lambdaEndpoint: string;
  /** JSON-lines file the local SessionCompacted publisher appends to (LOCAL_EVENTS_FILE); removed by stop(). */
  readonly eventsFile: string;
  /** The last 20 kB of serverless-offline's output (for error messages). */
  log(): string;
  /** Resolves when serverless-offline exits, whether stop() was called or it died. */
  readonly whenExited: Promise<ProcessExit>;
  stop(): Promise<void>;
}

export class PortInUseError extends Error {
  constructor(
    readonly port: number,
    what: string,
    detail?: string,
  ) {
    super(`port ${port} (${what}) is already in use${detail ? `: ${detail}` : ''}`);
    this.name = 'PortInUseError';
  }
}

/** Deployed-style function name, e.g. session-lineage-local-sweep. */
export function localFunctionName(key: string): string {
  return `${SERVICE_NAME}-${LOCAL_STAGE}-${key}`;
}

function serverlessBin(): string {
  const require = createRequire(import.meta.url);
  return join(require.resolve('serverless/package.json'), '..', 'bin', 'serverless.js');
}

/** What an unauthenticated request must get back from our API (lib/api: 401 {error:{code:'unauthorized'}}). */
async function ourServiceAnswers(url: string): Promise<{ ok: true } | { ok: false; answer: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  const text = await res.text();
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown } };
    if (res.status === 401 && body.error?.code === 'unauthorized') return { ok: true };
  } catch {
    // not JSON: not us
  }
  return { ok: false, answer: `HTTP ${res.status} ${text.slice(0, 120)}` };
}

/** serverless-offline's listen failure: "listen EADDRINUSE: address already in use 127.0.0.1:3000". */
function listenFailure(output: string, ports: { http: number; lambda: number }): PortInUseError | undefined {
  if (!output.includes('EADDRINUSE')) return undefined;
  const m = /EADDRINUSE: address already in use \S*?:(\d+)/.exec(output);
  const port = m ? Number(m[1]) : undefined;
  if (port === ports.lambda) return new PortInUseError(port, 'serverless-offline Lambda invoke API', m![0]);
  if (port === ports.http) return new PortInUseError(port, 'serverless-offline HTTP API', m![0]);
  return new PortInUseError(
    port ?? ports.http,
    `serverless-offline could not listen; HTTP ${ports.http} or Lambda ${ports.lambda}`,
    m?.[0] ?? 'EADDRINUSE',
  );
}

async function waitUntilReady(
  url: string,
  child: ChildProcess,
  timeoutMs: number,
  log: () => string,
  ports: { http: number; lambda: number },
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastAnswer: string | undefined;
  while (Date.now() < deadline) {
    const inUse = listenFailure(log(), ports);
    if (inUse) throw inUse;
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`serverless offline exited early (code ${child.exitCode}, signal ${child.signalCode})\n${log()}`);
    }
    try {
      const r = await ourServiceAnswers(url);
      if (r.ok) return;
      lastAnswer = r.answer;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const other = lastAnswer ? ` (something else answers there: ${lastAnswer})` : '';
  throw new Error(`serverless offline did not answer as session-lineage on ${url} within ${timeoutMs} ms${other}\n${log()}`);
}

export async function startOffline(opts: OfflineOptions): Promise<OfflineProcess> {
  const eventsDir = mkdtempSync(join(tmpdir(), 'session-lineage-offline-'));
  const env: Record<string, string> = { LOCAL_EVENTS_FILE: join(eventsDir, 'compaction-events.jsonl') };
  for (const [k, v] of Object.entries({ ...process.env, ...opts.env })) if (v !== undefined) env[k] = v;
  // Packaging-time credentials are never needed offline; keep the SDK from looking for real ones.
  env.AWS_ACCESS_KEY_ID ??= 'local';
  env.AWS_SECRET_ACCESS_KEY ??= 'local';
  env.SLS_TELEMETRY_DISABLED = '1';
  env.SLS_NOTIFICATIONS_MODE = 'off';
  const eventsFile = env.LOCAL_EVENTS_FILE!;
  const websocketPort = opts.httpPort + 1 === opts.lambdaPort ? opts.lambdaPort + 1 : opts.httpPort + 1;
  const child = spawn(
    process.execPath,
    [
      serverlessBin(),
      'offline',
      'start',
      '--stage',
      LOCAL_STAGE,
      '--httpPort',
      String(opts.httpPort),
      '--lambdaPort',
      String(opts.lambdaPort),
      '--websocketPort',
      String(websocketPort),
      '--host',
      '127.0.0.1',
    ],
    // Always piped: the output is how a failed listen is noticed; 'inherit' echoes it as well.
    { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'], detached: opts.detached ?? false },
  );
  let output = '';
  const keep = (echo: NodeJS.WriteStream | undefined) => (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
    echo?.write(chunk);
  };
  const inherit = opts.output === 'inherit';
  child.stdout?.on('data', keep(inherit ? process.stdout : undefined));
  child.stderr?.on('data', keep(inherit ? process.stderr : undefined));
  const whenExited = new Promise<ProcessExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const removeEvents = () => rmSync(eventsDir, { recursive: true, force: true });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await whenExited;
      clearTimeout(timer);
    }
    removeEvents();
  };
  const baseUrl = `http://127.0.0.1:${opts.httpPort}`;
  try {
    await waitUntilReady(`${baseUrl}/sessions`, child, opts.readyTimeoutMs ?? 60_000, () => output, {
      http: opts.httpPort,
      lambda: opts.lambdaPort,
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    pid: child.pid ?? -1,
    baseUrl,
    lambdaEndpoint: `http://127.0.0.1:${opts.lambdaPort}`,
    eventsFile,
    log: () => output,
    whenExited,
    stop,
  };
}

/** Invokes a local function through serverless-offline's Lambda Invoke API and returns its JSON result. */
export async function invokeLocal(lambdaEndpoint: string, functionKey: string, payload: unknown = {}): Promise<unknown> {
  const res = await fetch(`${lambdaEndpoint}/2015-03-31/functions/${localFunctionName(functionKey)}/invocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(payload),
    signal: AbortSignal.timeout(120_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`invoke ${functionKey}: HTTP ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}
