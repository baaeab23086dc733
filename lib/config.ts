// Runtime configuration from the environment, validated once. Defaults point at the
// local stack written by `npm start` (infra/local/.local-stack.json is read by infra, not here).
import { z } from 'zod';

const schema = z.object({
  REDIS_URLS: z.string().min(1).default('redis://127.0.0.1:6379'),
  DYNAMODB_ENDPOINT: z.string().url().optional(),
  AWS_REGION: z.string().default('us-east-1'),
  TABLE_NAME: z.string().min(1).default('session-lineage'),
  LEASE_TTL_MS: z.coerce.number().int().positive().default(30_000),
});

export type Config = z.infer<typeof schema>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return schema.parse(env);
}

export function redisUrls(config: Pick<Config, 'REDIS_URLS'>): string[] {
  return config.REDIS_URLS.split(',').map((u) => u.trim()).filter(Boolean);
}
