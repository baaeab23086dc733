// Bounded exponential backoff with full jitter for DynamoDB's transient errors. The client is
// built with maxAttempts 1 (lib/clients.ts), so these are the only retries; exhausting them
// surfaces StoreRetryableError, which callers map to "try again later".
import { StoreRetryableError } from '../errors.js';

export interface RetryOptions {
  /** Total tries, first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { maxAttempts: 5, baseDelayMs: 25, maxDelayMs: 1000 };

const TRANSIENT_NAMES = new Set([
  'TransactionConflictException',
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
]);

/** Cancellation reason codes that mean "contention", not "your condition is false". */
const TRANSIENT_REASONS = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded']);

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

export function isTransient(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (TRANSIENT_NAMES.has(err.name)) return true;
  if (isTransactionCanceled(err)) {
    const codes = cancellationCodes(err);
    return !codes.includes('ConditionalCheckFailed') && codes.some((c) => TRANSIENT_REASONS.has(c));
  }
  return false;
}

export function backoffDelay(attempt: number, opts: RetryOptions, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** attempt));
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function withRetry<T>(what: string, op: () => Promise<T>, opts: RetryOptions = DEFAULT_RETRY): Promise<T> {
  let last: unknown;
  for (let i = 0; i < opts.maxAttempts; i++) {
    try {
      return await op();
    } catch (err) {
      if (!isTransient(err)) throw err;
      last = err;
      if (i < opts.maxAttempts - 1) await sleep(backoffDelay(i, opts));
    }
  }
  throw new StoreRetryableError(`${what}: still failing after ${opts.maxAttempts} tries`, last);
}
