// Where the crash-point child (crash-child.ts) kills itself, and how the test runs it.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CRASH_EXIT_CODE = 86;
export const crashPoints = ['after_acquire', 'after_begin', 'after_child_messages', 'after_commit'] as const;
export type CrashPoint = (typeof crashPoints)[number];

const childScript = fileURLToPath(new URL('./crash-child.ts', import.meta.url));

export interface CrashRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs crash-child.ts in a fresh node process (tsx loader) with the stack env plus `env`. */
export function runCrashChild(env: Record<string, string>): Promise<CrashRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', childScript], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
