import { describe, expect, it } from 'vitest';
import { engineConfigFromEnvironment as engineConfigFromEnv } from '../../../lib/config.js';
import { engineFromConfig, ExtractiveCompressor, OpenAiSummarizer } from '../../../lib/compressors/index.js';

// The environment is parsed once into the service config (lib/config.ts); engines come from that config.
const engineFromEnv = (env: NodeJS.ProcessEnv) => engineFromConfig(engineConfigFromEnv(env));

describe('C6: engineFromConfig picks the pluggable engine', () => {
  it('extractive config (nothing set, or blank, as serverless renders unset variables) → extractive', () => {
    expect(engineFromConfig({ kind: 'extractive' })).toBeInstanceOf(ExtractiveCompressor);
    expect(engineFromEnv({})).toBeInstanceOf(ExtractiveCompressor);
    expect(engineFromEnv({ OPENAI_BASE_URL: '', OPENAI_MODEL: ' ', OPENAI_API_KEY: '' })).toBeInstanceOf(ExtractiveCompressor);
  });

  it('openai config (with or without an API key) → summarizer declaring signal/deadline/focus', () => {
    const withKey = engineFromConfig({ kind: 'openai', baseUrl: 'http://127.0.0.1:1/v1', model: 'gpt-4o-mini', apiKey: 'sk-test' });
    const keyless = engineFromEnv({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', OPENAI_MODEL: 'llama3' });
    for (const engine of [withKey, keyless]) {
      expect(engine).toBeInstanceOf(OpenAiSummarizer);
      expect(engine.acceptedOptions).toEqual(['keepLast', 'targetTokens', 'signal', 'deadline', 'focus']);
    }
  });

  it('a half-set environment is an error naming the missing variable', () => {
    expect(() => engineFromEnv({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' })).toThrow(/OPENAI_MODEL is missing/);
    expect(() => engineFromEnv({ OPENAI_MODEL: 'gpt-4o-mini' })).toThrow(/OPENAI_BASE_URL is missing/);
  });
});
