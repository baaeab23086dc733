// Where the crash-point child (crash-child.ts) kills itself, and how the test runs it.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { bundleChild } from '../bundle-child.js';

export const CRASH_EXIT_CODE = 86;
export const crashPoints = ['after_acquire', 'after_begin', 'after_child_messages', 'after_commit'] as const;
export type CrashPoint = (typeof crashPoints)[number];

const childSource = fileURLToPath(new URL('./crash-child.ts', import.meta.url));
const childBundle = fileURLToPath(new URL('../../../node_modules/.cache/chaos/crash-child.mjs', import.meta.url));

export async function buildCrashChild(): Promise<void> {
  await bundleChild(childSource, childBundle);
}

export interface CrashRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the bundled crash-child.ts (buildCrashChild first) in a fresh node process with the stack env plus `env`. */
export function runCrashChild(env: Record<string, string>): Promise<CrashRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [childBundle], {
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
