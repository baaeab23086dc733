// The after-turn message body, validated at the edge of the consumer.
import { z } from 'zod';
import type { AfterTurnEvent } from './publisher.js';
import { InvalidAfterTurnEventError } from './errors.js';

// Same id alphabet bounds as a DynamoDB key part; a hostile body cannot build odd keys.
const id = z.string().min(1).max(256);

export const afterTurnEventSchema = z.object({
  tenantId: id,
  sessionId: id,
  origin: z.enum(['turn', 'review', 'manual']),
}) satisfies z.ZodType<AfterTurnEvent>;

export function parseAfterTurnBody(body: string): AfterTurnEvent {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new InvalidAfterTurnEventError('body is not JSON');
  }
  const parsed = afterTurnEventSchema.safeParse(json);
  if (!parsed.success) throw new InvalidAfterTurnEventError(z.prettifyError(parsed.error));
  return parsed.data;
}
