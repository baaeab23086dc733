// Latency statistics for side-by-side measurements. Machines are shared and noisy, so
// the bench reports percentiles and the RATIO of medians measured in one interleaved run.
import { performance } from 'node:perf_hooks';

export interface Summary {
  n: number;
  p50: number;
  p99: number;
  mean: number;
}

export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

export function summarize(samples: readonly number[]): Summary {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / (s.length || 1);
  return { n: s.length, p50: round(percentile(s, 0.5)), p99: round(percentile(s, 0.99)), mean: round(mean) };
}

export function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export async function timeIt(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export interface Comparison {
  subject: Summary;
  baseline: Summary;
  /** subject p50 / baseline p50. */
  ratioP50: number;
}

/**
 * Runs `subject` and `baseline` alternately (ABAB...) so both see the same machine load;
 * `warmup` rounds are discarded.
 */
export async function interleave(
  iterations: number,
  subject: (i: number) => Promise<unknown>,
  baseline: (i: number) => Promise<unknown>,
  warmup = Math.min(20, Math.ceil(iterations / 10)),
): Promise<Comparison> {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < iterations + warmup; i++) {
    // Alternate which side goes first so neither always benefits from a warm connection.
    const first = i % 2 === 0;
    const ta = first ? await timeIt(() => subject(i)) : Number.NaN;
    const tb = await timeIt(() => baseline(i));
    const ta2 = first ? ta : await timeIt(() => subject(i));
    if (i >= warmup) {
      a.push(ta2);
      b.push(tb);
    }
  }
  return compare(a, b);
}

export function compare(subjectSamples: readonly number[], baselineSamples: readonly number[]): Comparison {
  const subject = summarize(subjectSamples);
  const baseline = summarize(baselineSamples);
  return { subject, baseline, ratioP50: round(subject.p50 / baseline.p50, 2) };
}
