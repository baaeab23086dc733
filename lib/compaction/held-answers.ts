// What held attempts answer (SPEC E1-E8): the public view of an attempt (never its token), the
// begin's answer, the refusals and their statuses, and the token's digest the lease and the
// record hold. Apart from held-attempts.ts, which plays the requests.
import { createHash, timingSafeEqual } from 'node:crypto';
import { ServiceError, type ErrorCode } from '../errors.js';
import type { Item } from '../items/types.js';
import { LEASE_UNAVAILABLE_MESSAGE } from '../lease/errors.js';
import type { HeldOutcomeRecord } from '../lineage/types.js';
import type { Ending } from './phases/index.js';
import type { CompactionMode, CompactionOrigin, DisabledReason } from './types.js';

export type HeldStatus = 'running' | 'committed' | 'cancelled' | 'expired' | 'lost';

/** A public view of an attempt: never the token (E8). */
export interface AttemptView {
  attemptId: string;
  sessionId: string;
  mode: CompactionMode;
  fence: number;
  throughSeq: number;
  /** P6: the snapshot is the session's oldest part (through throughSeq); the commit replaces exactly it. */
  partial?: true;
  ttlMs: number;
  heartbeatIntervalMs: number;
  expiresAt?: string;
  status?: HeldStatus;
  outcome?: Record<string, unknown>;
}

/** E1's begin; X2: `expected` is an ownership receipt (the live session and its item count as the caller read them). */
export interface HeldBeginRequest {
  mode: CompactionMode;
  origin: CompactionOrigin;
  ttlMs?: number;
  expected?: { sessionId?: string; count: number; lastSeq?: number };
}

export type BeginAnswer =
  | { outcome: 'started'; attempt: AttemptView & { leaseToken: string }; messages: Item[] }
  | { outcome: 'skipped'; reason: string; sessionId: string; holder?: string | null }
  | { outcome: 'noop'; reason: string; sessionId: string }
  | { outcome: 'disabled'; reason: DisabledReason; sessionId: string };

/** Why a request about an attempt was refused; the API maps each to its status (404, 403, 409, 503). */
export type HeldRefusal = 'not_found' | 'token_invalid' | 'lease_lost' | 'committed' | 'commit_in_progress' | 'lease_unavailable';

const REFUSALS: Record<HeldRefusal, { status: number; code: ErrorCode; message: string }> = {
  not_found: { status: 404, code: 'not_found', message: 'compaction attempt not found' },
  token_invalid: { status: 403, code: 'lease_token_invalid', message: 'the Lease-Token does not hold this attempt' },
  lease_lost: { status: 409, code: 'lease_lost', message: 'the attempt lost its lease; it can never commit' },
  committed: { status: 409, code: 'committed', message: 'the attempt was committed' },
  commit_in_progress: { status: 409, code: 'commit_in_progress', message: 'the attempt is committing' },
  lease_unavailable: { status: 503, code: 'lease_unavailable', message: LEASE_UNAVAILABLE_MESSAGE },
};

/** A request about an attempt that is not the caller's to make now (E2-E5, E8), answered as its status says. */
export class HeldAttemptRefused extends ServiceError {
  override readonly name = 'HeldAttemptRefused';
  constructor(
    readonly refusal: HeldRefusal,
    readonly attemptId: string,
  ) {
    const r = REFUSALS[refusal];
    super(r.message, { status: r.status, code: r.code, retryable: r.status === 503 });
  }
}

/** The Redis value and recorded holder of a token: its digest, so neither shows the secret (E8). */
export function leaseValueOf(token: string): string {
  return `held:${createHash('sha256').update(token).digest('base64url')}`;
}

export function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** E8: an ended attempt's outcome is the token's alone (rows written before holders were kept: anyone's, as before). */
export function heldBy(prior: HeldOutcomeRecord, holder: string): boolean {
  return prior.holder === undefined || sameText(prior.holder, holder);
}

export function endingAnswer(e: Ending, sessionId: string): Record<string, unknown> {
  switch (e.ended) {
    case 'skipped':
      return { outcome: 'skipped', reason: e.reason, sessionId: e.sessionId, ...(e.holder !== undefined ? { holder: e.holder } : {}) };
    case 'noop':
      return { outcome: 'noop', reason: e.reason, sessionId };
    case 'disabled':
      return { outcome: 'disabled', reason: e.reason, sessionId: e.sessionId };
  }
}
