// What follows a compaction attempt, whichever engine ran it (issue 14, E6): the EMF metrics of
// every attempt that ended, and the SessionCompacted event of every commit, sent once the lease
// is released. Both drivers use it: compact.ts (the service's engine) and held-attempts.ts (the
// agent's), so operators see agent compactions exactly as they see the service's.
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { sessionCompactedEvent, type CompactionEventPublisher } from '../events/session-compacted.js';
import { recordCompaction, type CompactionOutcomeKind, type CompactionOutcomeLike } from '../telemetry/compaction-metrics.js';

export interface CompactionFollowUps {
  /** EMF metrics (telemetry/compaction-metrics.ts); none when unset. */
  metrics?: Metrics;
  /** Where SessionCompacted goes; none when unset. */
  events?: CompactionEventPublisher;
}

/** A committed compaction as the event needs it. */
export interface CommittedLike {
  mode: 'rotate' | 'in_place';
  sessionId: string;
  previousSessionId: string;
  generation?: number | undefined;
  conversationId?: string | undefined;
}

/** Counts one attempt that ended (never throws: metrics are buffered EMF lines). */
export function countAttempt(deps: CompactionFollowUps, outcome: CompactionOutcomeLike, commitMs?: number): void {
  if (deps.metrics) recordCompaction(deps.metrics, outcome, { latencyMs: commitMs });
}

/** Announces a commit; a publisher reports and never throws, so the answer never depends on it. */
export async function announceCommit(
  deps: CompactionFollowUps,
  tenantId: string,
  committed: CommittedLike,
  correlationId?: string,
): Promise<void> {
  if (deps.events) await deps.events.publish(sessionCompactedEvent(tenantId, committed, new Date(), correlationId));
}

/** An API answer (a held attempt's) as the metrics count it: their dimensions are a closed set (compaction-metrics.ts). */
export function counted(answer: Record<string, unknown>): CompactionOutcomeLike {
  return { outcome: answer.outcome as CompactionOutcomeKind, reason: typeof answer.reason === 'string' ? answer.reason : undefined };
}

/** A compressed API answer as the SessionCompacted event names it. */
export function committedOf(answer: Record<string, unknown>): CommittedLike {
  return {
    mode: answer.mode === 'rotate' ? 'rotate' : 'in_place',
    sessionId: String(answer.sessionId),
    previousSessionId: String(answer.previousSessionId),
    generation: typeof answer.generation === 'number' ? answer.generation : undefined,
    conversationId: typeof answer.conversationId === 'string' ? answer.conversationId : undefined,
  };
}
