// Compaction engines and the config switch between them.
import { ExtractiveCompressor } from './extractive.js';
import { OpenAiSummarizer } from './openai-summarizer.js';
import type { CompressionEngine, EngineConfig } from './types.js';

export * from './types.js';
export { DEFAULT_KEEP_LAST, planCompaction, assemble, resolveKeepLast, type TranscriptPlan } from './transcript-plan.js';
export { ExtractiveCompressor, extractiveCompress, summaryBudget } from './extractive.js';
export {
  OpenAiSummarizer,
  DEFAULT_MAX_TRANSCRIPT_CHARS,
  DEFAULT_SUMMARIZER_TIMEOUT_MS,
  type OpenAiSummarizerOptions,
} from './openai-summarizer.js';

/** `openai` config → LLM summarizer (extractive fallback); `extractive` → extractive. */
export function engineFromConfig(config: EngineConfig): CompressionEngine {
  if (config.kind === 'extractive') return new ExtractiveCompressor();
  return new OpenAiSummarizer({ ...config, fallback: new ExtractiveCompressor() });
}
