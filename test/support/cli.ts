// Running the operator CLI in tests: as a child process (`node infra/cli/launch.ts`, as `npm run cli`
// does: the esbuild bundle, rebuilt when a source changed) or in-process through `run()` with in-memory streams (for mocked AWS clients and prompts).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { run } from '../../infra/cli/main.js';
import type { LocalStackFile } from '../../infra/local/stack-file.js';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

const projectRoot = fileURLToPath(new URL('../..', import.meta.url));
const STACK_VARIABLES = ['REDIS_URLS', 'DYNAMODB_ENDPOINT', 'TABLE_NAME'] as const;

/** The test stack's endpoints (vitest global setup) as `npm start` would write them to its stack file. */
export function testStackFile(overrides: Partial<LocalStackFile> = {}): LocalStackFile {
  return {
    redisUrls: process.env.REDIS_URLS!.split(','),
    dynamodbEndpoint: process.env.DYNAMODB_ENDPOINT!,
    tableName: process.env.TABLE_NAME!,
    baseUrl: 'http://127.0.0.1:1',
    lambdaEndpoint: 'http://127.0.0.1:1',
    pid: process.pid,
    ...overrides,
  };
}

/**
 * The environment of a CLI run. `stackFile` given: the CLI finds the stack through that file only
 * (the stack variables are removed); otherwise through the variables, with a stack file that does
 * not exist, so a developer's running `npm start` is never touched.
 */
export function cliEnv(opts: { stackFile?: LocalStackFile; env?: Record<string, string> } = {}): {
  env: NodeJS.ProcessEnv;
  cleanup: () => void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'cli-test-'));
  const file = join(dir, 'stack.json');
  const env: NodeJS.ProcessEnv = { ...process.env, LOCAL_STACK_FILE: file, NODE_NO_WARNINGS: '1' };
  if (opts.stackFile) {
    writeFileSync(file, JSON.stringify(opts.stackFile));
    for (const v of STACK_VARIABLES) delete env[v];
  }
  Object.assign(env, opts.env);
  return { env, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** `npm run cli -- ...args` as a child process, stdin not a terminal. */
export function cli(args: string[], opts: { stackFile?: LocalStackFile; env?: Record<string, string> } = {}): Promise<CliRun> {
  const { env, cleanup } = cliEnv(opts);
  const child = spawn(process.execPath, ['infra/cli/launch.ts', ...args], { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      cleanup();
      resolve({ code, stdout, stderr });
    });
  });
}

function sink(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  return { stream, text: () => text };
}

/** `run()` in this process: `answer` is typed at the prompt when `interactive`. */
export async function cliInProcess(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; interactive?: boolean; answer?: string } = {},
): Promise<CliRun> {
  const stdout = sink();
  const stderr = sink();
  const stdin = new PassThrough();
  if (opts.answer !== undefined) stdin.end(opts.answer);
  const code = await run(args, {
    stdout: stdout.stream,
    stderr: stderr.stream,
    stdin,
    interactive: opts.interactive ?? false,
    env: opts.env ?? { ...process.env, LOCAL_STACK_FILE: '/nonexistent/stack.json' },
  });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}
