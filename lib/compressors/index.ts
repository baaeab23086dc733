// Compaction engines and the env switch between them.
import { engineConfigFromEnv, type EngineConfig } from './engine-config.js';
import { ExtractiveCompressor } from './extractive.js';
import { OpenAiSummarizer } from './openai-summarizer.js';
import type { CompressionEngine } from './types.js';

export * from './types.js';
export * from './tokens.js';
export * from './tool-calls.js';
export * from './transcript-plan.js';
export * from './extractive.js';
export * from './openai-summarizer.js';
export * from './engine-config.js';

/** OPENAI_BASE_URL + OPENAI_MODEL (+ OPENAI_API_KEY) → LLM summarizer (extractive fallback); nothing set → extractive. */
export function engineFromEnv(env: NodeJS.ProcessEnv = process.env): CompressionEngine {
  return engineFromConfig(engineConfigFromEnv(env));
}

export function engineFromConfig(config: EngineConfig): CompressionEngine {
  if (config.kind === 'extractive') return new ExtractiveCompressor();
  return new OpenAiSummarizer({ ...config, fallback: new ExtractiveCompressor() });
}
