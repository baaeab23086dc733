// Every failure the API reports is an HttpError shaped `{error: {code, message}}` (SPEC F1);
// anything unexpected becomes an opaque 500.
import { LeaseUnavailableError } from '../lease/errors.js';
import { InvalidCursorError } from '../lineage/cursor.js';
import {
  AttemptInFlightError,
  ChainDeletedError,
  ConversationNotFoundError,
  CountMismatchError,
  FormatMismatchError,
  FenceStaleError,
  IdempotencyKeyReusedError,
  ItemTooLargeError,
  LineageTooDeepError,
  RotationLostError,
  SessionEndedError,
  SessionExistsError,
  SessionNotFoundError,
  StaleCursorError,
  StoreOutcomeUnknownError,
  StoreRetryableError,
} from '../lineage/errors.js';

export type ErrorCode =
  | 'invalid_json'
  | 'invalid_request'
  | 'unauthorized'
  | 'not_found'
  | 'method_not_allowed'
  | 'session_ended'
  | 'chain_deleted'
  | 'count_mismatch'
  | 'cursor_stale'
  | 'lineage_too_deep'
  | 'conflict'
  | 'format_mismatch'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'idempotency_key_reused'
  | 'lease_unavailable'
  | 'unavailable'
  | 'outcome_unknown'
  | 'rate_limited'
  | 'internal';

export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    /** Extra top-level body fields (e.g. liveSessionId on 409). */
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const RETRY_AFTER_SECONDS = 2;
const retryAfter = { 'retry-after': String(RETRY_AFTER_SECONDS) };

/** 400 naming the field (`messages[3].tool_calls[0].id`) and saying what is wrong with it. */
export function invalidField(field: string, message: string): HttpError {
  return new HttpError(400, 'invalid_request', `${field}: ${message}`, { field });
}

export function notFound(sessionId: string): HttpError {
  // The same answer for unknown and other-tenant sessions: existence is never revealed (SPEC F2).
  return new HttpError(404, 'not_found', `session ${sessionId} not found`);
}

/** The lease backend could not decide (SPEC C2, F1): retry later. */
export function leaseUnavailable(): HttpError {
  return new HttpError(503, 'lease_unavailable', 'the lease backend (Redis) is unavailable; retry shortly', {}, retryAfter);
}

/** Maps domain errors to statuses; returns null for anything unexpected (a 500). */
export function fromDomainError(err: unknown): HttpError | null {
  if (err instanceof HttpError) return err;
  if (err instanceof SessionNotFoundError) return notFound(err.sessionId);
  if (err instanceof ConversationNotFoundError) return new HttpError(404, 'not_found', err.message);
  if (err instanceof FormatMismatchError) return new HttpError(409, 'format_mismatch', err.message);
  if (err instanceof SessionEndedError || err instanceof RotationLostError) {
    return new HttpError(409, 'session_ended', err.message, { liveSessionId: err.liveSessionId });
  }
  if (err instanceof ChainDeletedError) return new HttpError(409, 'chain_deleted', err.message, { liveSessionId: null });
  if (err instanceof CountMismatchError) return new HttpError(409, 'count_mismatch', err.message, { messageCount: err.messageCount });
  if (err instanceof StaleCursorError) return new HttpError(409, 'cursor_stale', err.message);
  if (err instanceof InvalidCursorError) return invalidField('cursor', err.message);
  if (err instanceof LineageTooDeepError) return new HttpError(409, 'lineage_too_deep', err.message);
  if (err instanceof IdempotencyKeyReusedError) return new HttpError(422, 'idempotency_key_reused', err.message);
  if (err instanceof SessionExistsError) return new HttpError(409, 'conflict', err.message);
  if (err instanceof ItemTooLargeError) {
    const what = err.index >= 0 ? `messages[${err.index}] is ${err.bytes} bytes stored` : `the append is ${err.bytes} bytes stored`;
    return new HttpError(413, 'payload_too_large', `${what}; the limit is ${err.limit}`);
  }
  if (err instanceof StoreOutcomeUnknownError) {
    // Not the "nothing applied" 503 below: the client must not repeat a pop or an in-place compaction on it.
    return new HttpError(
      503,
      'outcome_unknown',
      'the store did not confirm the write; it may have been applied: read the session before repeating it',
      {},
      retryAfter,
    );
  }
  if (err instanceof FenceStaleError || err instanceof AttemptInFlightError || err instanceof StoreRetryableError) {
    return new HttpError(503, 'unavailable', 'the session is busy; retry shortly', {}, retryAfter);
  }
  if (err instanceof LeaseUnavailableError) return leaseUnavailable();
  return null;
}
