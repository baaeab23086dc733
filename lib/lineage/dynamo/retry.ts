// Our own retries, for what the AWS SDK's standard strategy (lib/aws-clients.ts) does not retry:
// transaction conflicts (TransactionConflictException, and a TransactionCanceled whose reasons are
// conflicts or throttling). Transport errors, 5xx and throttling are the SDK's; when they outlive
// its attempts they surface here as StoreRetryableError ("try again later", HTTP 503), never as
// an opaque 500. Condition failures are answers, not errors, and are never retried here.
import { isExhaustedTransient, THROTTLING_NAMES, UNSENT_CODES } from '../../aws-errors.js';
import { StoreRetryableError } from '../errors.js';

export { isExhaustedTransient };

export interface RetryOptions {
  /** Total tries, first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { maxAttempts: 5, baseDelayMs: 25, maxDelayMs: 1000 };

/** Cancellation reason codes that mean "contention", not "your condition is false". */
const CONTENTION_REASONS = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded']);

export function cancellationCodes(err: unknown): string[] {
  const reasons = (err as { CancellationReasons?: { Code?: string }[] } | null)?.CancellationReasons;
  return (reasons ?? []).map((r) => r.Code ?? 'None');
}

export function isTransactionCanceled(err: unknown): boolean {
  return err instanceof Error && err.name === 'TransactionCanceledException';
}

export function isConditionFailure(err: unknown): boolean {
  if (err instanceof Error && err.name === 'ConditionalCheckFailedException') return true;
  return isTransactionCanceled(err) && cancellationCodes(err).includes('ConditionalCheckFailed');
}

/** Contention our loop retries. */
export function isContention(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'TransactionConflictException') return true;
  if (isTransactionCanceled(err)) {
    const codes = cancellationCodes(err);
    return !codes.includes('ConditionalCheckFailed') && codes.some((c) => CONTENTION_REASONS.has(c));
  }
  return false;
}

/**
 * Whether a write the SDK gave up on may still have been applied: a timeout, a reset or a 5xx
 * after the request was sent (DynamoDB can apply it and the answer is lost, or apply it later
 * when a stalled server resumes). Only a single try that never connected, or was throttled, is
 * known not to have applied; after several tries an earlier one may have.
 */
export function mayHaveApplied(err: unknown): boolean {
  if (!isExhaustedTransient(err)) return false;
  const e = err as Error & { code?: string; $metadata?: { attempts?: number } };
  // Never reached DynamoDB (no connection), or refused unapplied (throttled).
  const refused = (e.code !== undefined && UNSENT_CODES.includes(e.code)) || THROTTLING_NAMES.includes(e.name);
  return !(refused && (e.$metadata?.attempts ?? 1) <= 1);
}

/** A backoff's shape: full jitter up to min(max, base * 2^attempt). */
export type Backoff = Pick<RetryOptions, 'baseDelayMs' | 'maxDelayMs'>;

export function backoffDelay(attempt: number, opts: Backoff, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** attempt));
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The rounds of a conditional write that can lose races: the one bounded loop of the store's
 * writes (append, pop, begin, commit, conversations). Yields 0, 1, 2... while fewer than `max`
 * rounds have run, or until the deadline `until` (on `now`) passes; the code after the loop
 * answers that the session kept changing (StoreRetryableError, "nothing applied").
 */
export function* rounds(bound: { max: number } | { until: number; now: () => number }): Generator<number> {
  for (let round = 0; 'max' in bound ? round < bound.max : bound.now() < bound.until; round++) yield round;
}

export async function withRetry<T>(what: string, op: () => Promise<T>, opts: RetryOptions = DEFAULT_RETRY): Promise<T> {
  let last: unknown;
  for (let i = 0; i < opts.maxAttempts; i++) {
    try {
      return await op();
    } catch (err) {
      if (isExhaustedTransient(err))
        throw new StoreRetryableError(`${what}: ${err instanceof Error ? err.name : 'failed'} after the client's retries`, err, {
          slow: true,
        });
      if (!isContention(err)) throw err;
      last = err;
      if (i < opts.maxAttempts - 1) await sleep(backoffDelay(i, opts));
    }
  }
  throw new StoreRetryableError(`${what}: still failing after ${opts.maxAttempts} tries`, last);
}
