// Runs the built functions under serverless-offline (stage `local`) against a local
// stack. Shared by `npm start` and test/support/local-service.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { projectRoot } from '../build.js';

export const SERVICE_NAME = 'session-lineage';
export const LOCAL_STAGE = 'local';

export interface OfflineOptions {
  httpPort: number;
  lambdaPort: number;
  /** Environment for the functions (REDIS_URLS, DYNAMODB_ENDPOINT, TABLE_NAME, ...). */
  env: Record<string, string | undefined>;
  /** Where serverless-offline's own output goes; default: discarded. */
  output?: 'inherit' | 'ignore' | 'pipe';
  readyTimeoutMs?: number;
}

export interface OfflineProcess {
  readonly pid: number;
  readonly baseUrl: string;
  readonly lambdaEndpoint: string;
  /** Output so far when `output: 'pipe'` (for error messages). */
  log(): string;
  stop(): Promise<void>;
}

/** Deployed-style function name, e.g. session-lineage-local-sweep. */
export function localFunctionName(key: string): string {
  return `${SERVICE_NAME}-${LOCAL_STAGE}-${key}`;
}

function serverlessBin(): string {
  const require = createRequire(import.meta.url);
  return join(require.resolve('serverless/package.json'), '..', 'bin', 'serverless.js');
}

async function waitForHttp(url: string, child: ChildProcess, timeoutMs: number, log: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`serverless offline exited early (code ${child.exitCode})\n${log()}`);
    }
    try {
      // Any HTTP answer (our 401 JSON) means the HTTP server is up.
      await fetch(url, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(`serverless offline did not answer on ${url} within ${timeoutMs} ms\n${log()}`);
}

export async function startOffline(opts: OfflineOptions): Promise<OfflineProcess> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, ...opts.env })) if (v !== undefined) env[k] = v;
  // Packaging-time credentials are never needed offline; keep the SDK from looking for real ones.
  env.AWS_ACCESS_KEY_ID ??= 'local';
  env.AWS_SECRET_ACCESS_KEY ??= 'local';
  env.SLS_TELEMETRY_DISABLED = '1';
  env.SLS_NOTIFICATIONS_MODE = 'off';
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
    { cwd: projectRoot, env, stdio: ['ignore', opts.output ?? 'ignore', opts.output ?? 'ignore'] },
  );
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  const baseUrl = `http://127.0.0.1:${opts.httpPort}`;
  try {
    await waitForHttp(`${baseUrl}/sessions`, child, opts.readyTimeoutMs ?? 60_000, () => output);
  } catch (err) {
    await stop();
    throw err;
  }
  return { pid: child.pid ?? -1, baseUrl, lambdaEndpoint: `http://127.0.0.1:${opts.lambdaPort}`, log: () => output, stop };
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
