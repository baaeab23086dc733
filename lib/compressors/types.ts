// A compaction engine (SPEC C6): pluggable, called once per attempt with only the
// options it declares (our equivalent of the seed's signature introspection). Engines see
// the session's items in its own format and answer items of that format (SPEC A2).
import type { Item, ItemFormat } from '../items/types.js';

export interface CompressOptions {
  /** Keep this many most recent items verbatim. */
  keepLast?: number;
  /** Token budget the result should fit. */
  targetTokens?: number;
  /** Fires when the attempt is cancelled or its lease lost; engines should stop early. */
  signal?: AbortSignal;
  /** Epoch ms by which the engine must return (Lambda remaining time minus a margin). */
  deadline?: number;
  /** Free-text focus for LLM summarizers. */
  focus?: string;
}

export type CompressOptionName = keyof CompressOptions;

/** Which engine the service runs; lib/config.ts fills it from the OPENAI_* variables (SPEC C6). */
export type EngineConfig = { kind: 'extractive' } | { kind: 'openai'; baseUrl: string; model: string; apiKey?: string };

/** What an engine compacts: a session's items and the format they are in. */
export interface Transcript {
  format: ItemFormat;
  items: readonly Item[];
}

export interface CompressResult {
  /** Items of the transcript's format. */
  items: Item[];
  /** Human-readable warnings returned to the caller (SPEC C12), e.g. "summarizer failed; fell back". */
  warnings?: string[];
  /** The engine gave up part-way; the attempt reports a warning and writes nothing. */
  aborted?: boolean;
}

export interface CompressionEngine {
  readonly name: string;
  /** Options this engine accepts; anything else is never passed. */
  readonly acceptedOptions: readonly CompressOptionName[];
  compress(transcript: Transcript, options: CompressOptions): Promise<CompressResult>;
}
