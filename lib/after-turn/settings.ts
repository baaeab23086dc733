// After-turn settings not (yet) in lib/config.ts; read from the environment the same way.
import { z } from 'zod';

const schema = z.object({
  AFTER_TURN_COMPACTION_MODE: z.enum(['rotate', 'in_place']).default('rotate'),
  /** How long a processed messageId is remembered; SQS keeps messages up to 14 days, retries come far sooner. */
  AFTER_TURN_IDEMPOTENCY_TTL_SECONDS: z.coerce.number().int().positive().default(24 * 3600),
});

export interface AfterTurnSettings {
  mode: 'rotate' | 'in_place';
  idempotencyTtlSeconds: number;
}

export function afterTurnSettings(env: NodeJS.ProcessEnv = process.env): AfterTurnSettings {
  const s = schema.parse(env);
  return { mode: s.AFTER_TURN_COMPACTION_MODE, idempotencyTtlSeconds: s.AFTER_TURN_IDEMPOTENCY_TTL_SECONDS };
}
