// The after-turn message body, validated at the edge of the consumer.
import * as z from 'zod/mini';
import type { AfterTurnEvent } from './publisher.js';
import { InvalidAfterTurnEventError } from './errors.js';
import { safeParse } from '../validation.js';

// Same id alphabet bounds as a DynamoDB key part; a hostile body cannot build odd keys.
const id = z.string().check(z.minLength(1), z.maxLength(256));

export const afterTurnEventSchema = z.object({
  tenantId: id,
  sessionId: id,
  conversationId: z.optional(id),
  origin: z.enum(['turn', 'review', 'manual']),
  /** The HTTP request that published it (x-request-id), carried into the consumer's logs. */
  correlationId: z.optional(z.string().check(z.maxLength(256))),
});

export function parseAfterTurnBody(body: string): AfterTurnEvent {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new InvalidAfterTurnEventError('body is not JSON');
  }
  const parsed = safeParse(afterTurnEventSchema, json);
  if (!parsed.success) {
    throw new InvalidAfterTurnEventError(parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
  }
  return parsed.data;
}
