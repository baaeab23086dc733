// Typed errors: one class per thing a caller handles differently, each carrying the HTTP
// status, the API's error code and the body it sent (SPEC F1 `{error: {code, message}}`).
import type { ErrorCode } from './types.js';

/** Base of everything the client throws on purpose. */
export class LineageError extends Error {
  override name = 'LineageError';
  /** The Idempotency-Key of the append or create that failed: retry later with it and it still applies at most once (24 h). */
  idempotencyKey?: string;
  /** An earlier attempt of the same request failed without an answer, so it may have been applied (a retried DELETE answering 404, say). */
  earlierAttemptMayHaveApplied = false;
}

/** An HTTP error response. `code` is the API's code, or `unexpected_response` for a body that is not the API's JSON (a gateway's 502 page). */
export class LineageApiError extends LineageError {
  override name = 'LineageApiError';
  readonly status: number;
  readonly code: ErrorCode | 'unexpected_response';
  /** The response body as sent (parsed JSON, or the text when it was not JSON). */
  readonly body: unknown;
  readonly requestId: string | undefined;
  /** From Retry-After (503). */
  readonly retryAfterMs: number | undefined;

  constructor(status: number, body: unknown, headers: Headers) {
    const err = apiErrorBody(body);
    super(
      err ? `${status} ${err.code}: ${err.message}` : `HTTP ${status}${typeof body === 'string' && body ? `: ${body.slice(0, 200)}` : ''}`,
    );
    this.status = status;
    this.code = err?.code ?? 'unexpected_response';
    this.body = body;
    this.requestId = err?.requestId ?? headers.get('x-request-id') ?? undefined;
    this.retryAfterMs = parseRetryAfter(headers.get('retry-after'));
  }

  /** True when the body is the API's own error JSON (the service answered; its 503s say nothing was applied, but `outcome_unknown`). */
  get fromService(): boolean {
    return this.code !== 'unexpected_response';
  }
}

/** 400: invalid JSON, or a field failing validation; `field` names it (`messages[3].tool_calls[0].id`). */
export class BadRequestError extends LineageApiError {
  override name = 'BadRequestError';
  get field(): string | undefined {
    return stringField(this.body, 'field');
  }
}
/** 401: missing or invalid API key. */
export class UnauthorizedError extends LineageApiError {
  override name = 'UnauthorizedError';
}
/** 404: unknown or deleted session, or another tenant's (indistinguishable on purpose, SPEC F2). */
export class NotFoundError extends LineageApiError {
  override name = 'NotFoundError';
}
/** 409 session_ended: the session was compacted by rotation (or ended); continue on `liveSessionId`, the live tip (null when it was deleted). */
export class SessionEndedError extends LineageApiError {
  override name = 'SessionEndedError';
  get liveSessionId(): string | null {
    return stringField(this.body, 'liveSessionId') ?? null;
  }
}
/** 409 count_mismatch: `expectedCount` was not the session's count; `messageCount` is (SPEC A4). */
export class CountMismatchError extends LineageApiError {
  override name = 'CountMismatchError';
  get messageCount(): number | undefined {
    const n = (this.body as { messageCount?: unknown } | null)?.messageCount;
    return typeof n === 'number' ? n : undefined;
  }
}
/** 409 cursor_stale: compacted in place since the cursor was issued; page again from the start. */
export class CursorStaleError extends LineageApiError {
  override name = 'CursorStaleError';
}
/** Any other 409 (`conflict`, `lineage_too_deep`, `turn_superseded`, `turn_ended`, `turn_expired`, `turn_required`, `lease_lost`...). */
export class ConflictError extends LineageApiError {
  override name = 'ConflictError';
}
/** 409 conversation_busy (SPEC T1, T2): another turn holds the conversation; `body.activeTurn` names it (never its token). Retry after `retryAfterMs`. */
export class ConversationBusyError extends ConflictError {
  override name = 'ConversationBusyError';
}
/** 413: body over 1 MiB, or an item over the stored-size limit. */
export class PayloadTooLargeError extends LineageApiError {
  override name = 'PayloadTooLargeError';
}
/** 415: a POST body that is not application/json in UTF-8. */
export class UnsupportedMediaTypeError extends LineageApiError {
  override name = 'UnsupportedMediaTypeError';
}
/** 422 idempotency_key_reused: the key was used before with a different body. */
export class IdempotencyKeyReusedError extends LineageApiError {
  override name = 'IdempotencyKeyReusedError';
}
/** 500. */
export class InternalServerError extends LineageApiError {
  override name = 'InternalServerError';
}
/** 503 lease_unavailable / unavailable: retry after `retryAfterMs`. */
export class ServiceUnavailableError extends LineageApiError {
  override name = 'ServiceUnavailableError';
}

/** 429 rate_limited (this tenant's limit) or the stage throttle: nothing was applied; retry after `retryAfterMs`. */
export class RateLimitedError extends LineageApiError {
  override name = 'RateLimitedError';
}

/** No response: connection refused or reset, DNS, or the per-attempt timeout. */
export class LineageNetworkError extends LineageError {
  override name = 'LineageNetworkError';
  constructor(
    message: string,
    readonly timedOut: boolean,
    /** The request may have reached the service and been applied (true unless it provably was not sent). */
    readonly mayHaveApplied: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A 2xx whose body is not the JSON the document describes. */
export class LineageProtocolError extends LineageError {
  override name = 'LineageProtocolError';
}

type ApiErrorClass = new (status: number, body: unknown, headers: Headers) => LineageApiError;

const BY_STATUS: Record<number, ApiErrorClass> = {
  400: BadRequestError,
  401: UnauthorizedError,
  404: NotFoundError,
  413: PayloadTooLargeError,
  415: UnsupportedMediaTypeError,
  422: IdempotencyKeyReusedError,
  429: RateLimitedError,
  500: InternalServerError,
  503: ServiceUnavailableError,
};

const CONFLICTS: Partial<Record<string, ApiErrorClass>> = {
  session_ended: SessionEndedError,
  count_mismatch: CountMismatchError,
  cursor_stale: CursorStaleError,
  conversation_busy: ConversationBusyError,
};

/** The typed error for an error response. */
export function toApiError(status: number, body: unknown, headers: Headers): LineageApiError {
  if (status === 409) {
    const cls = CONFLICTS[apiErrorBody(body)?.code ?? ''] ?? ConflictError;
    return new cls(status, body, headers);
  }
  const cls = BY_STATUS[status] ?? LineageApiError;
  return new cls(status, body, headers);
}

function apiErrorBody(body: unknown): { code: ErrorCode; message: string; requestId?: string } | undefined {
  const e = (body as { error?: unknown } | null)?.error as { code?: unknown; message?: unknown; requestId?: unknown } | undefined;
  if (!e || typeof e.code !== 'string' || typeof e.message !== 'string') return undefined;
  return { code: e.code as ErrorCode, message: e.message, ...(typeof e.requestId === 'string' ? { requestId: e.requestId } : {}) };
}

function stringField(body: unknown, name: string): string | undefined {
  const v = (body as Record<string, unknown> | null)?.[name];
  return typeof v === 'string' ? v : undefined;
}

/** Retry-After as delta-seconds or an HTTP date, in ms; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
