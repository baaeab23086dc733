// Domain logic of one after-turn event (SPEC F3, C13): is compaction due (one read of the
// session record: its running token estimate, kept by every append, against the threshold),
// and if so, compact; map the attempt's outcome to "done" (a result) or "try again" (a throw).
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { DEFAULT_COMMIT_SAFETY_MARGIN_MS } from '../compaction/compact-session.js';
import type { CompactionMode, CompactionOutcome, CompactRequest, DisabledReason } from '../compaction/types.js';
import { SessionNotFoundError } from '../lineage/errors.js';
import type { LineageStore, SessionRecord } from '../lineage/types.js';
import { recordCompaction } from '../telemetry/compaction-metrics.js';
import { AfterTurnRetryableError } from './errors.js';
import type { AfterTurnEvent } from './publisher.js';

export interface AfterTurnDeps {
  store: Pick<LineageStore, 'getSession' | 'liveTip'>;
  compact(req: CompactRequest): Promise<CompactionOutcome>;
  /** Compaction is due once the session's token estimate passes this (an estimate: lib/items/tokens.ts). */
  thresholdTokens: number;
  mode: CompactionMode;
  /** EMF metrics: an event refused by the session's policy (E6) is counted like the attempt it did not start. */
  metrics?: Metrics;
}

export interface AfterTurnInput {
  event: AfterTurnEvent;
  /** Lease holder identity: function name, request id, message id. */
  holder: string;
  remainingTimeMs?: () => number;
}

/** Small and JSON-safe: it is stored as the idempotency record's response. */
export type AfterTurnResult =
  | { status: 'disabled'; reason: DisabledReason }
  | { status: 'below_threshold'; tokens: number; threshold: number }
  | { status: 'session_ended'; liveSessionId: string | null }
  | { status: 'compacted'; mode: CompactionMode; sessionId: string; previousSessionId: string; tokens: number }
  | { status: 'skipped'; reason: 'locked' | 'stale'; holder: string | null }
  | { status: 'adopted'; sessionId: string }
  | { status: 'noop'; reason: string };

export type DueCheck = { due: false; result: AfterTurnResult } | { due: true; session: SessionRecord };

/** C13 first (by rule, nothing read), then one GetItem: does the policy let the service compact it (E6), is it over the threshold? */
export async function checkDue(deps: AfterTurnDeps, event: AfterTurnEvent): Promise<DueCheck> {
  if (event.origin === 'review') return { due: false, result: { status: 'disabled', reason: 'review_origin' } };
  const ref = { tenantId: event.tenantId, sessionId: event.sessionId };
  const session = await deps.store.getSession(ref);
  // A session we cannot find will not appear on retry: the batch reports it and it dead-letters.
  if (!session) throw new SessionNotFoundError(event.sessionId);
  // The turn happened on a session that was rotated since; its live tip gets its own events.
  if (session.endedAt) return { due: false, result: { status: 'session_ended', liveSessionId: await deps.store.liveTip(ref) } };
  if (session.tokenEstimate <= deps.thresholdTokens) {
    return { due: false, result: { status: 'below_threshold', tokens: session.tokenEstimate, threshold: deps.thresholdTokens } };
  }
  // E6: the conversation compacts with the agent's own engine; the same read says so, no lease is
  // taken. (A policy set after this read is still refused, by the begin's own condition.)
  if (session.compactionPolicy === 'agent') {
    if (deps.metrics) recordCompaction(deps.metrics, { outcome: 'disabled', reason: 'agent_engine' });
    return { due: false, result: { status: 'disabled', reason: 'agent_engine' } };
  }
  return { due: true, session };
}

export async function compactDue(deps: AfterTurnDeps, input: AfterTurnInput, session: SessionRecord): Promise<AfterTurnResult> {
  const { event } = input;
  const request: CompactRequest = {
    ref: { tenantId: event.tenantId, sessionId: event.sessionId },
    mode: deps.mode,
    origin: event.origin,
    holder: input.holder,
    ...(event.correlationId ? { correlationId: event.correlationId } : {}),
    ...(input.remainingTimeMs ? { remainingTimeMs: input.remainingTimeMs } : {}),
  };
  let outcome = await deps.compact(request);
  // P6: a long session is compacted one bounded part per attempt; go on until it is under the
  // threshold. Out of time first: the redelivery goes on from where this one stopped.
  while (outcome.outcome === 'compressed' && outcome.partial && (outcome.remainingTokens ?? 0) > deps.thresholdTokens) {
    if (input.remainingTimeMs && input.remainingTimeMs() < ATTEMPT_RESERVE_MS)
      throw new AfterTurnRetryableError('partial', 'compaction is part of the way through a long session; the redelivery goes on');
    outcome = await deps.compact(request);
  }
  return resultOf(outcome, session.tokenEstimate);
}

/** Invocation time a further bounded attempt needs at least: twice the commit margin (C9). */
const ATTEMPT_RESERVE_MS = 2 * DEFAULT_COMMIT_SAFETY_MARGIN_MS;

function resultOf(o: CompactionOutcome, tokens: number): AfterTurnResult {
  switch (o.outcome) {
    case 'compressed':
      return { status: 'compacted', mode: o.mode, sessionId: o.sessionId, previousSessionId: o.previousSessionId, tokens };
    case 'noop':
      return { status: 'noop', reason: o.reason };
    case 'disabled':
      return { status: 'disabled', reason: o.reason };
    case 'cancelled':
      // Ran out of invocation time before commit (C9): the next delivery gets a fresh budget.
      throw new AfterTurnRetryableError('cancelled');
    case 'skipped':
      switch (o.reason) {
        case 'locked':
        case 'stale':
          // Someone else is compacting this session right now (or a pop changed what we read);
          // their attempt, or the next turn's event, covers this turn.
          return { status: 'skipped', reason: o.reason, holder: o.holder ?? null };
        case 'adopted':
          return { status: 'adopted', sessionId: o.sessionId };
        case 'lease_unavailable':
        case 'lease_lost':
          throw new AfterTurnRetryableError(o.reason);
      }
  }
}
