// Builds and runs lineage-child.ts in separate node processes, and reads what they report.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { bundleChild } from '../bundle-child.js';
import type { ChildLine } from './lineage-child.js';

const source = fileURLToPath(new URL('./lineage-child.ts', import.meta.url));
const bundle = fileURLToPath(new URL('../../../node_modules/.cache/client/lineage-child.mjs', import.meta.url));

export async function buildLineageChild(): Promise<void> {
  await bundleChild(source, bundle);
}

export interface Child<L extends { kind: string } = ChildLine> {
  lines: L[];
  stderr(): string;
  /** Resolves with the first line of this kind (already seen or still to come). */
  next<K extends L['kind']>(kind: K, timeoutMs?: number): Promise<Extract<L, { kind: K }>>;
  send(line: string): void;
  exited: Promise<number | null>;
  kill(): void;
}

export function startLineageChild(env: Record<string, string>): Child {
  return startChild<ChildLine>(bundle, env);
}

/** A bundled child script (bundleChild) that writes JSON lines with a `kind` on stdout. */
export function startChild<L extends { kind: string }>(bundlePath: string, env: Record<string, string>): Child<L> {
  const proc: ChildProcessWithoutNullStreams = spawn(process.execPath, [bundlePath], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: L[] = [];
  const waiters: (() => void)[] = [];
  let err = '';
  let buf = '';
  proc.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const text = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (text.trim()) lines.push(JSON.parse(text) as L);
    }
    waiters.splice(0).forEach((w) => w());
  });
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    proc.on('exit', (code) => {
      waiters.splice(0).forEach((w) => w());
      resolve(code);
    }),
  );
  let done = false;
  void exited.then(() => (done = true));
  return {
    lines,
    stderr: () => err,
    async next(kind, timeoutMs = 120_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = lines.find((l) => l.kind === kind);
        if (found) return found as Extract<L, { kind: typeof kind }>;
        if (done) throw new Error(`child exited without a "${kind}" line:\n${err.slice(-3000)}`);
        if (Date.now() > deadline) throw new Error(`no "${kind}" line within ${timeoutMs} ms:\n${err.slice(-3000)}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 500);
        });
      }
    },
    send: (line) => proc.stdin.write(`${line}\n`),
    exited,
    kill: () => proc.kill('SIGKILL'),
  };
}
