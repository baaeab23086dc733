// The SessionCompacted event (issue 14): every committed compaction announces itself so other
// parts of an agent platform can react (re-index the child, move a UI to the live session...).
// Publishing happens after the commit and must never fail it: publishers report, never throw.
import * as z from 'zod/mini';
import { safeParse } from '../validation.js';

export const EVENT_SOURCE = 'session-lineage';
export const EVENT_DETAIL_TYPE = 'SessionCompacted';

const id = z.string().check(z.minLength(1));

export const sessionCompactedSchema = z.object({
  tenantId: id,
  /** K1: the conversation (stable across rotations) the session belongs to. */
  conversationId: z.optional(id),
  /** The session that was compacted. */
  parentSessionId: id,
  /** Rotation: the new child. */
  childSessionId: z.optional(id),
  /** In place: the generation that became active. */
  generation: z.optional(z.number().check(z.int(), z.gte(0))),
  mode: z.enum(['rotate', 'in_place']),
  /** The live session after the commit (the child for a rotation, the same id in place). */
  sessionId: id,
  /** ISO-8601 commit time. */
  at: z.iso.datetime(),
  /** API Gateway request id (or SQS message id) of the request that caused the compaction. */
  correlationId: z.optional(id),
});

export type SessionCompacted = z.infer<typeof sessionCompactedSchema>;

export type PublishResult = { published: true } | { published: false; error: string };

export interface CompactionEventPublisher {
  /** Resolves with the outcome; never rejects, so a caller can await it right after its commit. */
  publish(e: SessionCompacted): Promise<PublishResult>;
}

/** Schema check shared by every publisher: a malformed event is reported, not sent. */
export function checkEvent(e: unknown): { ok: true; event: SessionCompacted } | { ok: false; error: string } {
  const r = safeParse(sessionCompactedSchema, e);
  if (r.success) return { ok: true, event: r.data };
  return {
    ok: false,
    error: `invalid SessionCompacted event: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
  };
}

/** Low-cardinality identifiers for a failure log line (no message content, only ids). */
export function eventIds(e: SessionCompacted): Record<string, unknown> {
  return { tenantId: e.tenantId, parentSessionId: e.parentSessionId, sessionId: e.sessionId, mode: e.mode, correlationId: e.correlationId };
}

/** The event for a committed compaction outcome. */
export function sessionCompactedEvent(
  tenantId: string,
  o: {
    mode: 'rotate' | 'in_place';
    sessionId: string;
    previousSessionId: string;
    generation?: number | undefined;
    conversationId?: string | undefined;
  },
  at: Date,
  correlationId?: string,
): SessionCompacted {
  return {
    tenantId,
    ...(o.conversationId !== undefined ? { conversationId: o.conversationId } : {}),
    parentSessionId: o.previousSessionId,
    mode: o.mode,
    sessionId: o.sessionId,
    at: at.toISOString(),
    ...(o.mode === 'rotate' ? { childSessionId: o.sessionId } : o.generation !== undefined ? { generation: o.generation } : {}),
    ...(correlationId ? { correlationId } : {}),
  };
}
