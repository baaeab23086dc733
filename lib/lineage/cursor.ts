// Opaque page cursors (SPEC A5): base64url of a small versioned JSON, bound to the session it
// was issued for, never a raw DynamoDB key. A tampered or foreign cursor is refused, not guessed at.
import { createHash } from 'node:crypto';
import { ServiceError } from '../errors.js';
import type { PagePosition } from './types.js';

const INVALID_CURSOR = 'cursor is not one this API issued for this session';

export class InvalidCursorError extends ServiceError {
  override readonly name = 'InvalidCursorError';
  constructor() {
    super(INVALID_CURSOR, {
      status: 400,
      code: 'invalid_request',
      details: { field: 'cursor' },
      publicMessage: `cursor: ${INVALID_CURSOR}`,
    });
  }
}

function bind(tenantId: string, sessionId: string): string {
  return createHash('sha256').update(`${tenantId}/${sessionId}`).digest('base64url').slice(0, 10);
}

export function encodeCursor(tenantId: string, sessionId: string, at: PagePosition): string {
  return Buffer.from(JSON.stringify({ v: 1, s: bind(tenantId, sessionId), g: at.generation, a: at.afterSeq })).toString('base64url');
}

/** Whether `cursor` has the shape this API issues (for some session): a cursor of another session of a chain is stale, not forged. */
export function isIssuedCursor(cursor: string): boolean {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) return false;
  try {
    const c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { v?: unknown; s?: unknown };
    return c?.v === 1 && typeof c.s === 'string';
  } catch {
    return false;
  }
}

export function decodeCursor(tenantId: string, sessionId: string, cursor: string): PagePosition {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) throw new InvalidCursorError();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError();
  }
  const c = parsed as { v?: unknown; s?: unknown; g?: unknown; a?: unknown };
  const whole = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (c?.v !== 1 || c.s !== bind(tenantId, sessionId) || !whole(c.g) || !whole(c.a)) throw new InvalidCursorError();
  return { generation: c.g, afterSeq: c.a };
}
