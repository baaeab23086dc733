// Domain logic of one after-turn event (SPEC F3, C13): is compaction due, and if so,
// compact; map the attempt's outcome to "done" (a result) or "try again" (a throw).
import type { CompactionMode, CompactionOutcome, CompactRequest } from '../compaction/types.js';
import { countTokens as defaultCountTokens } from '../compressors/tokens.js';
import { SessionNotFoundError } from '../lineage/errors.js';
import type { LineageStore } from '../lineage/types.js';
import type { Message } from '../messages.js';
import { AfterTurnRetryableError } from './errors.js';
import type { AfterTurnEvent } from './publisher.js';

export interface AfterTurnDeps {
  store: Pick<LineageStore, 'getSession' | 'readMessages'>;
  compact(req: CompactRequest): Promise<CompactionOutcome>;
  thresholdTokens: number;
  mode: CompactionMode;
  countTokens?: (messages: readonly Message[]) => number;
}

export interface AfterTurnInput {
  event: AfterTurnEvent;
  /** Lease holder identity: function name, request id, message id. */
  holder: string;
  remainingTimeMs?: () => number;
}

/** Small and JSON-safe: it is stored as the idempotency record's response. */
export type AfterTurnResult =
  | { status: 'disabled'; reason: 'review_origin' }
  | { status: 'below_threshold'; tokens: number; threshold: number }
  | { status: 'session_ended'; liveSessionId: string | null }
  | { status: 'compacted'; mode: CompactionMode; sessionId: string; previousSessionId: string; tokens: number }
  | { status: 'skipped'; reason: 'locked'; holder: string | null }
  | { status: 'adopted'; sessionId: string }
  | { status: 'noop'; reason: string };

export async function handleAfterTurn(deps: AfterTurnDeps, input: AfterTurnInput): Promise<AfterTurnResult> {
  const { event } = input;
  // C13: a review fork never compacts, whatever its size; decided before touching anything.
  if (event.origin === 'review') return { status: 'disabled', reason: 'review_origin' };

  const ref = { tenantId: event.tenantId, sessionId: event.sessionId };
  const session = await deps.store.getSession(ref);
  // A session we cannot find will not appear on retry: the batch reports it and it dead-letters.
  if (!session) throw new SessionNotFoundError(event.sessionId);
  // The turn happened on a session that was rotated since; its live child gets its own events.
  if (session.endedAt) return { status: 'session_ended', liveSessionId: session.childSessionId ?? null };

  const tokens = (deps.countTokens ?? defaultCountTokens)(await deps.store.readMessages(ref));
  if (tokens <= deps.thresholdTokens) return { status: 'below_threshold', tokens, threshold: deps.thresholdTokens };

  const outcome = await deps.compact({
    ref,
    mode: deps.mode,
    origin: event.origin,
    holder: input.holder,
    ...(input.remainingTimeMs ? { remainingTimeMs: input.remainingTimeMs } : {}),
  });
  return resultOf(outcome, tokens);
}

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
          // Someone else is compacting this session right now; their attempt covers this turn.
          return { status: 'skipped', reason: 'locked', holder: o.holder ?? null };
        case 'adopted':
          return { status: 'adopted', sessionId: o.sessionId };
        case 'lease_unavailable':
        case 'lease_lost':
          throw new AfterTurnRetryableError(o.reason);
      }
  }
}
