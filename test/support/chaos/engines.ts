// Compression engines for chaos tests and benchmarks: instant and deterministic, so what is
// measured or raced is the coordination, not a summarizer.
import type { CompressionEngine, CompressOptions, CompressResult, Transcript } from '../../../lib/compressors/types.js';
import { SUMMARY_PREFIX, type Item } from '../../../lib/items/types.js';

type Message = Item;

/** Returns a summary plus the last real user turn: always smaller than an input of 3+ messages. */
export function summarizeToTwo(messages: readonly Message[]): Message[] {
  const lastUser = [...messages].reverse().find((m) => m.role === 'user' && m.synthetic !== true);
  const summary: Message = { role: 'assistant', content: `${SUMMARY_PREFIX} ${messages.length} messages summarized` };
  return lastUser ? [summary, { ...lastUser }] : [summary];
}

export interface FixedEngineOptions {
  /** Awaited before returning (a promise the test controls, or a delay). */
  hold?: (messages: readonly Message[], options: CompressOptions) => Promise<void>;
  /** Called when the engine is invoked (counts calls, or kills the process at a crash point). */
  onCall?: (messages: readonly Message[]) => void;
}

export function fixedEngine(opts: FixedEngineOptions = {}): CompressionEngine & { calls: number } {
  const engine = {
    name: 'fixed-test-engine',
    acceptedOptions: ['signal'] as const,
    calls: 0,
    async compress({ items }: Transcript, options: CompressOptions): Promise<CompressResult> {
      engine.calls++;
      opts.onCall?.(items);
      await opts.hold?.(items, options);
      return { items: summarizeToTwo(items) };
    },
  };
  return engine;
}

/** Keeps the last `keep` items behind a summary: a compaction too large for one transaction when keep > 97. */
export function keepingEngine(keep: number, onCall?: () => void): CompressionEngine & { calls: number } {
  const engine = {
    name: 'keeping-test-engine',
    acceptedOptions: [] as const,
    calls: 0,
    async compress({ items }: Transcript): Promise<CompressResult> {
      engine.calls++;
      onCall?.();
      return {
        items: [{ role: 'assistant', content: `${SUMMARY_PREFIX} ${items.length - keep} items summarized` }, ...items.slice(-keep)],
      };
    },
  };
  return engine;
}

export function conversation(n: number, tag = 'm'): Message[] {
  return Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: `${tag}-${i}: ${i % 2 === 0 ? 'question' : 'answer'} number ${i}`,
  }));
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
