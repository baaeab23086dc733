// One API operation, attempted until it succeeds, fails for good, or runs out of retries:
// a per-attempt timeout, the caller's AbortSignal, typed errors, and retries only where
// repeating the request is safe (retry.ts `Safety`).
import { LineageApiError, LineageError, LineageNetworkError, LineageProtocolError, toApiError } from './errors.js';
import { retryDelayMs, sleep, type RetryPolicy, type Safety } from './retry.js';

/** What openapi-fetch resolves with (data typed from the document). */
export interface FetchResult<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

export interface SendOptions {
  safety: Safety;
  policy: RetryPolicy;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

export interface Sent<D> {
  data: D;
  response: Response;
  attempts: number;
}

const TIMED_OUT = Symbol('timed out');

export async function send<D>(attempt: (signal: AbortSignal) => Promise<FetchResult<D>>, opts: SendOptions): Promise<Sent<D>> {
  let mayHaveApplied = false;
  for (let n = 1; ; n++) {
    const outcome = await once(attempt, opts);
    // A 2xx: openapi-fetch resolved `data` as the document's success body (undefined for 204).
    if (!(outcome instanceof LineageError)) return { data: outcome.data as D, response: outcome.response, attempts: n };
    const failure = outcome;

    const decision = classify(failure, opts.safety);
    const earlier = mayHaveApplied;
    mayHaveApplied ||= decision.mayHaveApplied;
    const delay = decision.retry && n < opts.policy.maxAttempts ? retryDelayMs(n, opts.policy, retryAfterOf(failure)) : undefined;
    if (delay === undefined) {
      const final =
        failure instanceof LineageNetworkError
          ? new LineageNetworkError(`${failure.message} (after ${n} attempt${n > 1 ? 's' : ''})`, failure.timedOut, mayHaveApplied, {
              cause: failure.cause,
            })
          : failure;
      final.earlierAttemptMayHaveApplied = earlier;
      throw final;
    }
    await sleep(delay, opts.signal);
  }
}

/** One attempt: its result, or the typed failure. The caller's own abort is rethrown as it is. */
async function once<D>(
  attempt: (signal: AbortSignal) => Promise<FetchResult<D>>,
  opts: SendOptions,
): Promise<FetchResult<D> | LineageError> {
  if (opts.signal?.aborted) throw opts.signal.reason;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(TIMED_OUT), opts.timeoutMs);
  const onAbort = () => controller.abort(opts.signal!.reason);
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await attempt(controller.signal);
    if (result.response.ok) return result;
    return toApiError(result.response.status, result.error, result.response.headers);
  } catch (err) {
    if (opts.signal?.aborted) throw opts.signal.reason;
    if (controller.signal.reason === TIMED_OUT)
      return new LineageNetworkError(`no response within ${opts.timeoutMs} ms`, true, true, { cause: err });
    // openapi-fetch parses a 2xx body with JSON.parse: a SyntaxError means the service answered something else.
    if (err instanceof SyntaxError) return new LineageProtocolError(`the response is not JSON: ${err.message}`, { cause: err });
    return new LineageNetworkError(`request failed: ${describe(err)}`, false, !refusedBeforeSending(err), { cause: err });
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  }
}

interface Decision {
  retry: boolean;
  /** This failure leaves open whether the request was applied. */
  mayHaveApplied: boolean;
}

function classify(failure: LineageError, safety: Safety): Decision {
  if (failure instanceof LineageNetworkError) {
    return { retry: safety === 'repeatable' || !failure.mayHaveApplied, mayHaveApplied: failure.mayHaveApplied };
  }
  // 429 (a tenant limit, or the stage throttle) is refused before anything runs: nothing was applied.
  if (failure instanceof LineageApiError && failure.status === 429) return { retry: true, mayHaveApplied: false };
  if (failure instanceof LineageApiError && failure.status >= 500) {
    // The service's own 503 is decided before anything is written (but `outcome_unknown`: the
    // store did not confirm a write it may have applied); any other 5xx (a crash, a gateway
    // timeout) may come after a commit.
    if (failure.status === 503 && failure.fromService && failure.code !== 'outcome_unknown') return { retry: true, mayHaveApplied: false };
    return { retry: safety === 'repeatable', mayHaveApplied: true };
  }
  return { retry: false, mayHaveApplied: false };
}

function retryAfterOf(failure: LineageError): number | undefined {
  return failure instanceof LineageApiError && (failure.status === 503 || failure.status === 429) ? failure.retryAfterMs : undefined;
}

/** Connection refused: the request never left, so even a `once` request may be sent again. */
function refusedBeforeSending(err: unknown): boolean {
  const code = (err as { cause?: { code?: unknown } } | null)?.cause?.code;
  return code === 'ECONNREFUSED';
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
}
