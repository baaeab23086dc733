// The README's quick start is a test (issue 34). The commands come from README.md itself, not a copy:
// the run command of its first code block launches `npm start` (as a user runs it, with its default
// stack file, so the CLI must find it from the project), and every `sh` block under "A first
// conversation" runs literally, in order, in one bash (its KEY carries over), against it, and so do
// the ones under "Compacting with your own model", after them. Only the
// port differs (HTTP_PORT, as the README documents; LAMBDA_PORT too, and the data folder is fresh).
// A `# → …` line under a command is what the README says it prints: the output must contain its
// pieces between the `…` in that order. A failing command (bash -e) or a different output fails.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../../infra/build.js';
import { freePort } from '../../../infra/local/processes.js';
import { LOCAL_STACK_FILE } from '../../../infra/local/stack-file.js';

const README = readFileSync(join(projectRoot, 'README.md'), 'utf8');
const QUICK_START_HEADING = '## A first conversation';

interface Step {
  command: string;
  /** The `# → …` line's text, when the README shows the output. */
  expected?: string;
}

/** The fenced code blocks of a piece of markdown, with their language. */
function codeBlocks(markdown: string): { lang: string; body: string }[] {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, body: m[2]! }));
}

/** The held-compaction walk-through (issue 29) goes on with the quick start's conversation and KEY. */
const OWN_MODEL_HEADING = '## Compacting with your own model';

/**
 * The README's shell steps from a heading on (every `sh` block of that section and of the sections
 * after, which build on the quick start's KEY and conversation): each runs up to the next `# → `
 * line (the output it shows).
 */
function quickStartSteps(readme: string, heading = QUICK_START_HEADING): Step[] {
  const start = readme.indexOf(heading);
  if (start < 0) throw new Error(`README.md has no "${heading}" section`);
  const section = readme.slice(start);
  const steps: Step[] = [];
  for (const block of codeBlocks(section).filter((b) => b.lang === 'sh')) {
    let pending: string[] = [];
    for (const line of block.body.split('\n')) {
      const shown = /^# → (.*)$/.exec(line);
      if (shown) {
        steps.push({ command: pending.join('\n'), expected: shown[1]! });
        pending = [];
      } else if (line.trim() !== '') pending.push(line);
    }
    if (pending.length) steps.push({ command: pending.join('\n') });
  }
  return steps;
}

/** Whether `output` holds the pieces of `expected` between its `…`, in order. */
function matchesShown(output: string, expected: string): boolean {
  let at = 0;
  for (const piece of expected.split('…')) {
    const found = output.indexOf(piece, at);
    if (found < 0) return false;
    at = found + piece.length;
  }
  return true;
}

const work = mkdtempSync(join(tmpdir(), 'readme-quickstart-'));
let port: number;
let server: ChildProcess | undefined;
let serverOut = '';
let env: NodeJS.ProcessEnv;

/** The README's own text for a port: 127.0.0.1:3000 becomes this run's port. */
const onPort = (text: string) => text.replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`);

beforeAll(async () => {
  // The run command, from the top block of the README.
  const top = codeBlocks(README)[0];
  expect(top?.body.split('\n')[0]).toMatch(/^npm ci && npm start\s/);
  if (existsSync(LOCAL_STACK_FILE))
    throw new Error(`${LOCAL_STACK_FILE} exists: stop the npm start of this checkout first (the quick start uses the default stack file)`);
  port = await freePort();
  env = { ...process.env };
  for (const v of ['REDIS_URLS', 'DYNAMODB_ENDPOINT', 'TABLE_NAME', 'LOCAL_STACK_FILE']) delete env[v];
  const tmp = join(work, 'tmp');
  mkdirSync(tmp);
  Object.assign(env, { HTTP_PORT: String(port), LAMBDA_PORT: String(await freePort()), LOCAL_DATA_DIR: join(work, 'data'), TMPDIR: tmp });
  // `npm ci` is what the test command already did; the service part is `npm start`, its own process group.
  server = spawn('npm', ['start'], { cwd: projectRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  server.stdout!.on('data', (c: Buffer) => (serverOut += c.toString('utf8')));
  server.stderr!.on('data', (c: Buffer) => (serverOut += c.toString('utf8')));
  // As a user would: wait until the port answers, no longer (the stack file is written before it opens).
  const deadline = Date.now() + 240_000;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`npm start exited ${server.exitCode}\n${serverOut}`);
    if (Date.now() > deadline) throw new Error(`npm start did not come up\n${serverOut}`);
    const up = await fetch(`http://127.0.0.1:${port}/docs`).then(
      () => true,
      () => false,
    );
    if (up) break;
    await new Promise((r) => setTimeout(r, 250));
  }
}, 300_000);

afterAll(async () => {
  if (server?.pid && server.exitCode === null) {
    const closed = new Promise((r) => server!.once('close', r));
    process.kill(-server.pid, 'SIGINT');
    await closed;
  }
  rmSync(work, { recursive: true, force: true });
}, 60_000);

describe("the README's quick start (issue 34)", () => {
  it('has the steps the issue names: a key from the CLI, the curl walk-through of a conversation, /docs', () => {
    const commands = quickStartSteps(README).map((s) => s.command);
    expect(commands.some((c) => c.includes('npm run -s cli -- keys create'))).toBe(true);
    expect(commands.some((c) => /curl .*-X PUT .*\/conversations\//.test(c))).toBe(true);
    expect(commands.some((c) => c.includes('/compress'))).toBe(true);
    expect(commands.some((c) => c.includes('/docs'))).toBe(true);
    expect(commands.some((c) => c.includes('/turns') && c.includes('Turn-Token'))).toBe(true);
  });

  it('has the held-compaction walk-through: begin, heartbeat, commit (issue 29)', () => {
    const commands = quickStartSteps(README, OWN_MODEL_HEADING).map((s) => s.command);
    expect(commands.some((c) => /curl .*-X POST .*\/conversations\/support-42\/compactions /.test(c))).toBe(true);
    expect(commands.some((c) => c.includes('/heartbeat'))).toBe(true);
    expect(commands.some((c) => c.includes('/commit'))).toBe(true);
  });

  it('every command runs as written, in order, and prints what the README says (the quick start and every section after it)', async () => {
    const steps = quickStartSteps(README);
    const marker = (i: number) => `@@quickstart-step-${i}@@`;
    const script = ['set -eo pipefail', ...steps.flatMap((s, i) => [onPort(s.command), `echo; echo '${marker(i)}'`])].join('\n');
    const bash = spawn('bash', ['-c', script], { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    bash.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    bash.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => bash.once('close', resolve));
    let from = 0;
    steps.forEach((step, i) => {
      const at = out.indexOf(marker(i), from);
      expect(at, `step ${i + 1} did not finish:\n${step.command}\nstdout:\n${out.slice(from)}\nstderr:\n${err}`).toBeGreaterThanOrEqual(0);
      const printed = out.slice(from, at);
      if (step.expected !== undefined)
        expect(
          matchesShown(printed, onPort(step.expected)),
          `step ${i + 1}:\n${step.command}\nprinted:\n${printed}\nREADME says:\n${step.expected}`,
        ).toBe(true);
      from = at + marker(i).length;
    });
    expect(code, err).toBe(0);
    // The CLI found the stack through the default stack file (no LOCAL_STACK_FILE), printing what the key is.
    expect(err).toContain('# API key for tenant acme');
  }, 180_000);

  it('npm start stated the per-tenant limits in force in its banner', () => {
    expect(serverOut).toMatch(
      /per-tenant limits: \d+ requests\/s \(RATE_LIMIT_REQUESTS_PER_SECOND\), \d+ compressions\/min \(RATE_LIMIT_COMPRESSIONS_PER_MINUTE\)/,
    );
  });
});
