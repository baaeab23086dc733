// Bounded retries with jitter. Which failures are retried depends on whether repeating the
// request is safe (see `Safety`); how long to wait is decided here.

export interface RetryPolicy {
  /** Attempts in all, the first included (1 = never retry). */
  maxAttempts: number;
  /** First backoff ceiling; doubles per retry up to maxDelayMs. Each wait is drawn uniformly below it (full jitter). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A 503 asking for a longer wait than this is not retried: the error (with retryAfterMs) goes to the caller. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 4,
  baseDelayMs: 100,
  maxDelayMs: 2_000,
  maxRetryAfterMs: 10_000,
});

/**
 * How safe it is to send a request again.
 * - `repeatable`: repeating it cannot apply it twice (reads, DELETE of a session, appends and
 *   creates carrying an Idempotency-Key, a rotation, which the service adopts the second time):
 *   retried after network errors, timeouts and any 5xx.
 * - `once`: a repeat could apply it twice (pop, in-place compaction): retried only after the
 *   service's own 503, which says nothing was applied (not `outcome_unknown`, which says it may have been).
 */
export type Safety = 'repeatable' | 'once';

export function resolvePolicy(p: Partial<RetryPolicy> | undefined): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY, ...p };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1)
    throw new RangeError('retry.maxAttempts must be a whole number >= 1');
  for (const k of ['baseDelayMs', 'maxDelayMs', 'maxRetryAfterMs'] as const) {
    if (!Number.isFinite(policy[k]) || policy[k] < 0) throw new RangeError(`retry.${k} must be a finite number >= 0`);
  }
  return policy;
}

/**
 * The wait before retry number `retry` (1 for the first retry). A Retry-After is honoured, with
 * up to one base delay of jitter on top so a crowd told "2 s" does not come back in step;
 * undefined means "do not retry" (it asks for longer than maxRetryAfterMs).
 */
export function retryDelayMs(
  retry: number,
  policy: RetryPolicy,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number | undefined {
  if (retryAfterMs !== undefined) {
    if (retryAfterMs > policy.maxRetryAfterMs) return undefined;
    return retryAfterMs + random() * policy.baseDelayMs;
  }
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return random() * ceiling;
}

const abortReason = (signal: AbortSignal): Error => (signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));

/** Resolves after ms, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
