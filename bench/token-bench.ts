// Token counting time per KiB (issue 11 #3): one unbroken run of letters, the repro
// ("abcdefghij" repeated) and prose, at 1-380 KiB, with our counter and (where it finishes in
// seconds) plain gpt-tokenizer. Flat ms/KiB means linear. The machine is noisy: compare the
// ratios within one run (every size and kind is measured in the same interleaved rounds).
import { loadTokenCounter } from '../lib/items/tokens.js';
import { seeded } from '../test/fixtures/transcripts/generators.js';
import { round, summarize } from './stats.js';

export const TOKEN_BENCH_KIB = [1, 10, 38, 100, 380] as const;
/** Plain gpt-tokenizer is quadratic on one run (38 KiB takes about a second, 380 KiB over a minute): single runs stop here. */
const PLAIN_MAX_KIB = 38;

export type TokenBenchKind = 'single run (random letters)' | 'single run (issue repro)' | 'prose';

export interface TokenBenchRow {
  kind: TokenBenchKind;
  kib: number;
  tokens: number;
  /** p50 ms per KiB with lib/items/tokens.ts. */
  msPerKib: number;
  /** msPerKib / the same kind's msPerKib at 1 KiB (1 = perfectly linear). */
  ratioTo1Kib: number;
  /** p50 ms per KiB with plain gpt-tokenizer countTokens, when measured. */
  plainMsPerKib: number | null;
  plainRatioTo1Kib: number | null;
}

const PROSE =
  'Found it: the export fails because the S3 bucket policy was changed on Tuesday. We decided to use the new bucket invoices-v2 instead of restoring the policy; the backfill for 1,204 invoices finished at 09:14. ';

function text(kind: TokenBenchKind, kib: number, seed: number): string {
  const chars = kib * 1024;
  if (kind === 'prose') return `${seed} ${PROSE.repeat(Math.ceil(chars / PROSE.length))}`.slice(0, chars);
  // Both runs are new strings every time, so the tokenizer's piece cache never answers a whole run.
  if (kind === 'single run (issue repro)') return `${letters(8, seed)}${'abcdefghij'.repeat(Math.ceil(chars / 10))}`.slice(0, chars);
  return letters(chars, seed * 7919 + kib);
}

function letters(n: number, seed: number): string {
  const rand = seeded(seed);
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(97 + Math.floor(rand() * 26));
  return s;
}

export async function benchTokens(rounds: number): Promise<TokenBenchRow[]> {
  const counter = await loadTokenCounter();
  const plain = await import('gpt-tokenizer/encoding/o200k_base');
  const plainCount = (t: string): number => plain.countTokens(t, { disallowedSpecial: new Set<string>() });
  const kinds: TokenBenchKind[] = ['single run (random letters)', 'single run (issue repro)', 'prose'];
  const ours = new Map<string, number[]>();
  const reference = new Map<string, number[]>();
  const tokens = new Map<string, number>();
  // One sample counts about 38 KiB: small sizes count a batch of distinct texts, so a sample is never a 1 ms blip.
  const sample = (samples: Map<string, number[]>, key: string, inputs: string[], count: (t: string) => number): number => {
    let n = 0;
    const t0 = performance.now();
    for (const input of inputs) n = count(input);
    samples.set(key, [...(samples.get(key) ?? []), (performance.now() - t0) / inputs.length]);
    return n;
  };
  counter.countText(text('single run (random letters)', 10, 0)); // load and warm
  plainCount(text('single run (random letters)', 10, 0));
  for (let r = 0; r < rounds; r++) {
    for (const kib of TOKEN_BENCH_KIB) {
      const batch = Math.max(1, Math.round(PLAIN_MAX_KIB / kib));
      for (const kind of kinds) {
        const key = `${kind}|${kib}`;
        const inputs = (seed: number) => Array.from({ length: batch }, (_, b) => text(kind, kib, seed * 100 + b));
        tokens.set(key, sample(ours, key, inputs(r + 1), counter.countText));
        // Other strings than the ones just counted (the merge cache would help).
        if (kind === 'prose' || kib <= PLAIN_MAX_KIB) sample(reference, key, inputs(r + 1000), plainCount);
      }
    }
  }
  const perKib = (samples: number[] | undefined, kib: number): number | null => (samples ? summarize(samples).p50 / kib : null);
  return kinds.flatMap((kind) => {
    const base = perKib(ours.get(`${kind}|1`), 1)!;
    const plainBase = perKib(reference.get(`${kind}|1`), 1);
    return TOKEN_BENCH_KIB.map((kib) => {
      const key = `${kind}|${kib}`;
      const msPerKib = perKib(ours.get(key), kib)!;
      const plainMsPerKib = perKib(reference.get(key), kib);
      return {
        kind,
        kib,
        tokens: tokens.get(key) ?? 0,
        msPerKib: round(msPerKib),
        ratioTo1Kib: round(msPerKib / base, 2),
        plainMsPerKib: plainMsPerKib === null ? null : round(plainMsPerKib),
        plainRatioTo1Kib: plainMsPerKib === null || plainBase === null ? null : round(plainMsPerKib / plainBase, 2),
      };
    });
  });
}
