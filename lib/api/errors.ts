// Every failure the API reports is shaped `{error: {code, message}}` (SPEC F1). A ServiceError
// carries its own status and code (lib/errors.ts); anything else becomes an opaque 500.
import { ServiceError, type ErrorCode } from '../errors.js';
import { LEASE_UNAVAILABLE_MESSAGE } from '../lease/errors.js';

export type { ErrorCode };

/** An answer the API layer decides itself (bad input, auth, limits): a ServiceError with its own headers. */
export class HttpError extends ServiceError {
  override readonly name = 'HttpError';
  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    /** Extra top-level body fields (e.g. liveSessionId on 409). */
    details: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message, { status, code, details, retryable: status === 503 || status === 429 });
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
  return new HttpError(503, 'lease_unavailable', LEASE_UNAVAILABLE_MESSAGE, {}, retryAfter);
}

/** The answer for a service error; null for anything unexpected or internal (an opaque 500). */
export function fromDomainError(err: unknown): HttpError | null {
  if (err instanceof HttpError) return err;
  if (!(err instanceof ServiceError) || err.isInternal) return null;
  // "Try again later" answers say when (F1: 503 with Retry-After).
  const headers = err.retryable && err.status === 503 ? retryAfter : {};
  return new HttpError(err.status, err.code, err.publicMessage, err.details, headers);
}
