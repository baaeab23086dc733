// Which compaction engine the environment asks for; lib/config.ts folds it into the service config.
import { z } from 'zod';

// Serverless renders unset variables as '' — treat blank as unset.
const optionalText = z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), z.string().trim().optional());

export const engineEnvSchema = z
  .object({
    OPENAI_BASE_URL: optionalText.pipe(z.url({ message: 'OPENAI_BASE_URL must be a URL' }).optional()),
    OPENAI_API_KEY: optionalText,
    OPENAI_MODEL: optionalText,
  })
  .superRefine((env, ctx) => {
    const anySet = env.OPENAI_BASE_URL !== undefined || env.OPENAI_MODEL !== undefined || env.OPENAI_API_KEY !== undefined;
    if (!anySet) return;
    // Half a summarizer config is a deployment mistake: say which part is missing rather than silently going extractive.
    for (const name of ['OPENAI_BASE_URL', 'OPENAI_MODEL'] as const) {
      if (env[name] === undefined) {
        ctx.addIssue({ code: 'custom', path: [name], message: `${name} is missing (the summarizer needs OPENAI_BASE_URL and OPENAI_MODEL)` });
      }
    }
  });

export type EngineEnv = z.infer<typeof engineEnvSchema>;

export type EngineConfig =
  | { kind: 'extractive' }
  | { kind: 'openai'; baseUrl: string; model: string; apiKey?: string };

export function engineConfigFromEnv(env: NodeJS.ProcessEnv = process.env): EngineConfig {
  const parsed = engineEnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new Error(`Invalid compaction engine config: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  }
  const { OPENAI_BASE_URL: baseUrl, OPENAI_MODEL: model, OPENAI_API_KEY: apiKey } = parsed.data;
  if (baseUrl === undefined || model === undefined) return { kind: 'extractive' };
  return apiKey === undefined ? { kind: 'openai', baseUrl, model } : { kind: 'openai', baseUrl, model, apiKey };
}
