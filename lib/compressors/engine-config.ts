// Which compaction engine the service runs. The variables (OPENAI_BASE_URL, OPENAI_MODEL,
// OPENAI_API_KEY, OPENAI_API_KEY_SSM_PARAM) are validated with the rest of the environment
// in lib/config.ts, which fills `Config.engine`.
import { engineConfigFromEnvironment } from '../config.js';

export type EngineConfig = { kind: 'extractive' } | { kind: 'openai'; baseUrl: string; model: string; apiKey?: string };

/** The engine the environment asks for; throws naming the missing or malformed variable. */
export function engineConfigFromEnv(env: NodeJS.ProcessEnv = process.env): EngineConfig {
  return engineConfigFromEnvironment(env);
}
