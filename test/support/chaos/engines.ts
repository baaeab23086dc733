// Compression engines for chaos tests and benchmarks: instant and deterministic, so what is
// measured or raced is the coordination, not a summarizer.
import type { CompressionEngine, CompressOptions, CompressResult } from '../../../lib/compressors/types.js';
import { SUMMARY_PREFIX, type Message } from '../../../lib/messages.js';

/** Returns a summary plus the last real user turn: always smaller than an input of 3+ messages. */
export function summarizeToTwo(messages: readonly Message[]): Message[] {
  const lastUser = [...messages].reverse().find((m) => m.role === 'user' && !m.synthetic);
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
    async compress(messages: readonly Message[], options: CompressOptions): Promise<CompressResult> {
      engine.calls++;
      opts.onCall?.(messages);
      await opts.hold?.(messages, options);
      return { messages: summarizeToTwo(messages) };
    },
  };
  return engine;
}

export function conversation(n: number, tag = 'm'): Message[] {
  return Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
    content: `${tag}-${i}: ${i % 2 === 0 ? 'question' : 'answer'} number ${i}`,
  }));
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
