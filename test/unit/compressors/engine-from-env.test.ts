import { describe, expect, it } from 'vitest';
import { engineFromEnv, ExtractiveCompressor, OpenAiSummarizer } from '../../../lib/compressors/index.js';

describe('C6: engineFromEnv picks the pluggable engine from the environment', () => {
  it('nothing set (or blank, as serverless renders unset variables) → extractive', () => {
    expect(engineFromEnv({})).toBeInstanceOf(ExtractiveCompressor);
    expect(engineFromEnv({ OPENAI_BASE_URL: '', OPENAI_MODEL: ' ', OPENAI_API_KEY: '' })).toBeInstanceOf(ExtractiveCompressor);
  });

  it('base URL + model (with or without an API key) → summarizer declaring signal/deadline/focus', () => {
    const withKey = engineFromEnv({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', OPENAI_MODEL: 'gpt-4o-mini', OPENAI_API_KEY: 'sk-test' });
    const keyless = engineFromEnv({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', OPENAI_MODEL: 'llama3' });
    for (const engine of [withKey, keyless]) {
      expect(engine).toBeInstanceOf(OpenAiSummarizer);
      expect(engine.acceptedOptions).toEqual(['keepLast', 'targetTokens', 'signal', 'deadline', 'focus']);
    }
  });

  it('a half-set config is an error naming the missing variable', () => {
    expect(() => engineFromEnv({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' })).toThrow(/OPENAI_MODEL is missing/);
    expect(() => engineFromEnv({ OPENAI_MODEL: 'gpt-4o-mini' })).toThrow(/OPENAI_BASE_URL is missing/);
    expect(() => engineFromEnv({ OPENAI_API_KEY: 'sk-test' })).toThrow(/OPENAI_BASE_URL is missing.*OPENAI_MODEL is missing/);
  });

  it('a base URL that is not a URL is an error', () => {
    expect(() => engineFromEnv({ OPENAI_BASE_URL: 'localhost-ish', OPENAI_MODEL: 'm' })).toThrow(/OPENAI_BASE_URL must be a URL/);
  });
});
