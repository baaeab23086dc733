// Chaos-run counters. Each test file appends its counts as one JSON line; the chaos
// global setup sums them at teardown into test/chaos/.last-counts.json and prints one line.
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface ChaosCounts {
  racesRun: number;
  interleavingsExplored: number;
  crashesInjected: number;
  nodeFaultsInjected: number;
  inputsTried: number;
  /** Fuzzed requests answered with something other than a 4xx JSON error (must be 0). */
  inputViolations: number;
  forksFound: number;
  leakedLeases: number;
}

export const emptyCounts = (): ChaosCounts => ({
  racesRun: 0,
  interleavingsExplored: 0,
  crashesInjected: 0,
  nodeFaultsInjected: 0,
  inputsTried: 0,
  inputViolations: 0,
  forksFound: 0,
  leakedLeases: 0,
});

const journal = fileURLToPath(new URL('../../chaos/.counts.jsonl', import.meta.url));
export const lastCountsFile = fileURLToPath(new URL('../../chaos/.last-counts.json', import.meta.url));

/** Adds `partial` to this run's totals (called from a test file's afterAll). */
export function recordCounts(file: string, partial: Partial<ChaosCounts>): void {
  appendFileSync(journal, JSON.stringify({ file, ...partial }) + '\n');
}

export function resetCounts(): void {
  rmSync(journal, { force: true });
}

export interface CountsReport extends ChaosCounts {
  files: string[];
  finishedAt: string;
  durationMs: number;
  scale: number;
}

export function summarizeCounts(startedAt: number, scale: number): CountsReport {
  const total = emptyCounts();
  const files: string[] = [];
  if (existsSync(journal)) {
    for (const line of readFileSync(journal, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const entry = JSON.parse(line) as Partial<ChaosCounts> & { file: string };
      files.push(entry.file);
      for (const k of Object.keys(total) as (keyof ChaosCounts)[]) total[k] += entry[k] ?? 0;
    }
  }
  const report: CountsReport = {
    ...total,
    files,
    finishedAt: new Date().toISOString(),
    durationMs: Date.now() - startedAt,
    scale,
  };
  writeFileSync(lastCountsFile, JSON.stringify(report, null, 2) + '\n');
  return report;
}

export function countsLine(r: ChaosCounts): string {
  return (
    `chaos: races run ${r.racesRun} (interleavings ${r.interleavingsExplored}), crashes injected ${r.crashesInjected}, ` +
    `node faults ${r.nodeFaultsInjected}, inputs tried ${r.inputsTried} (violations ${r.inputViolations}), forks found = ${r.forksFound}, leaked leases = ${r.leakedLeases}`
  );
}

/** CHAOS_SCALE multiplies every iteration count (default 1; CI keeps the run under ~3 min). */
export function chaosScale(env: NodeJS.ProcessEnv = process.env): number {
  const s = Number(env.CHAOS_SCALE ?? 1);
  return Number.isFinite(s) && s > 0 ? s : 1;
}

export function scaled(n: number, env: NodeJS.ProcessEnv = process.env): number {
  return Math.max(1, Math.round(n * chaosScale(env)));
}
