// Every failure the API reports is an HttpError; anything else becomes an opaque 500.
import type { ZodError } from 'zod';
import {
  FenceStaleError,
  MessageTooLargeError,
  RotationLostError,
  SessionEndedError,
  SessionExistsError,
  SessionNotFoundError,
  StoreRetryableError,
} from '../lineage/errors.js';

export type ErrorCode =
  | 'invalid_json'
  | 'invalid_request'
  | 'unauthorized'
  | 'not_found'
  | 'method_not_allowed'
  | 'session_ended'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'unavailable'
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

/** "messages.0.role: Invalid option: expected one of ..." — names the field, from zod issues. */
export function describeZodError(err: ZodError, where: string): string {
  const parts = err.issues.slice(0, 5).map((i) => {
    const path = i.path.length ? i.path.map(String).join('.') : where;
    return `${path}: ${i.message}`;
  });
  return parts.join('; ');
}

export function invalidRequest(err: ZodError, where: string): HttpError {
  const first = err.issues[0];
  return new HttpError(400, 'invalid_request', describeZodError(err, where), {
    field: first && first.path.length ? first.path.map(String).join('.') : where,
  });
}

export function notFound(sessionId: string): HttpError {
  // The same answer for unknown and other-tenant sessions: existence is never revealed (SPEC F2).
  return new HttpError(404, 'not_found', `session ${sessionId} not found`);
}

export const RETRY_AFTER_SECONDS = 2;

/** Maps store errors to statuses; returns null for anything unexpected (a 500). */
export function fromDomainError(err: unknown): HttpError | null {
  if (err instanceof HttpError) return err;
  if (err instanceof SessionNotFoundError) return notFound(err.sessionId);
  if (err instanceof SessionEndedError || err instanceof RotationLostError) {
    return new HttpError(409, 'session_ended', err.message, { liveSessionId: err.liveSessionId });
  }
  if (err instanceof SessionExistsError) return new HttpError(409, 'conflict', err.message);
  if (err instanceof MessageTooLargeError) return new HttpError(413, 'payload_too_large', err.message);
  if (err instanceof FenceStaleError || err instanceof StoreRetryableError) {
    return new HttpError(503, 'unavailable', 'the session is busy; retry shortly', {}, { 'retry-after': String(RETRY_AFTER_SECONDS) });
  }
  if (err instanceof Error && err.name === 'LeaseUnavailableError') {
    return new HttpError(503, 'unavailable', 'lease backend unavailable; retry shortly', {}, { 'retry-after': String(RETRY_AFTER_SECONDS) });
  }
  return null;
}
