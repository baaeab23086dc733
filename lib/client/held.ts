// Held compaction attempts (SPEC E1-E4) played on the client: the seed's flow over HTTP. Begin
// (the lease, the fence, the snapshot), heartbeats while the agent's own engine runs (L5), the
// fenced commit, or the abort in `finally` (I3). Requests go through the client's transport (its
// timeouts, retries and typed errors); this file only orders them.
import { ConflictError } from './errors.js';
import { assertJsonValue } from './json-values.js';
import { retryDelayMs, sleep, type RetryPolicy, type Safety } from './retry.js';
import type { BeginCompactionResponse, CompactionAttempt, CompressMode, CompressOrigin, CompressResponse, Item } from './types.js';

export interface CompactionEngineInput {
  /** The snapshot: the session's items 1..attempt.throughSeq, which the returned items replace. */
  messages: Item[];
  /** Aborts when the caller's signal does, or when the lease was lost or could not be kept (L5): nothing will be committed. */
  signal: AbortSignal;
  /** The attempt, without its secret token. `truncated`: `messages` holds fewer than throughSeq items (the rest could not be read). */
  attempt: CompactionAttempt & { truncated?: boolean };
}

/** Your compactor: the replacement for the snapshot. Called exactly once per started attempt (C6). */
export type CompactionEngine = (input: CompactionEngineInput) => Promise<readonly unknown[]> | readonly unknown[];

export interface CompactWithOptions {
  mode?: CompressMode;
  origin?: CompressOrigin;
  /** The lease's TTL, 5000..900000 ms (default the service's). Heartbeats keep it while the engine runs. */
  ttlMs?: number;
  /** Cancels the attempt before its commit (C9): no commit, the lease released; a commit under way is waited for. */
  signal?: AbortSignal;
  /** SPEC X2, an ownership receipt: begin only while the live session is this one and holds this many items (else skipped/stale). */
  expectedSessionId?: string;
  expectedCount?: number;
  /** SPEC X2: and whose last sequence number is this (Session.lastSeq as read: a pop then an append keeps the count, not it). */
  expectedLastSeq?: number;
  /** SPEC X2: commit the engine's items exactly (no C8 anchor, no `grown` no-op). */
  verbatim?: boolean;
}

/** The commit's answer (as compress answers it), or why nothing was committed: the begin's answer (locked, disabled, nothing_to_compact), cancelled or lease_lost. */
export type CompactWithResult = Omit<CompressResponse, 'reason' | 'warnings'> & {
  reason?: CompressResponse['reason'] | 'cancelled';
  warnings?: string[];
};

/** One request on the attempt's routes (a POST unless said): `tail` follows …/compactions; `beat` is a heartbeat's timeout (one attempt). */
export type HeldCall = <D>(tail: string, req: HeldRequest, method?: 'POST' | 'DELETE') => Promise<D>;
export interface HeldRequest {
  token?: string;
  body?: unknown;
  safety?: Safety;
  beat?: number;
}

/**
 * The whole attempt. A loser (`locked`), `disabled` or `noop` begin answers as it is and the
 * engine never runs. An engine that throws gets the abort, then its error propagates (C6).
 */
export async function compactHeld(
  call: HeldCall,
  readSnapshot: (sessionId: string, throughSeq: number, signal: AbortSignal) => Promise<Item[]>,
  policy: RetryPolicy,
  engine: CompactionEngine,
  { signal: caller, verbatim, ...req }: CompactWithOptions,
): Promise<CompactWithResult> {
  // 'once': a begin that got no answer may hold the lease; repeated, it would meet itself as `locked`.
  const begun = await call<BeginCompactionResponse>('', { body: req, safety: 'once' });
  if (begun.outcome !== 'started') return begun as CompactWithResult;
  const { leaseToken: token, ...attempt } = begun.attempt!;
  const at = `/${attempt.attemptId}`; // base64url: safe in a path
  const lost = new AbortController();
  const signal = AbortSignal.any([lost.signal, caller ?? lost.signal]);
  const stop = keepAlive(attempt, lost, (beat) => call(`${at}/heartbeat`, { token, beat }));
  let ended = false;
  try {
    let messages = begun.messages!;
    // The begin cut a snapshot past the response budget: the rest is the session's items up to throughSeq.
    if (begun.truncated) messages = await readSnapshot(attempt.sessionId, attempt.throughSeq, signal);
    let replacement: readonly unknown[] | undefined;
    try {
      replacement = await engine({ messages, signal, attempt: { ...attempt, truncated: messages.length < attempt.throughSeq } });
    } catch (err) {
      if (!signal.aborted) throw err;
    }
    await stop();
    const skipped = (reason: 'lease_lost' | 'cancelled') => ({ outcome: 'skipped', reason, sessionId: attempt.sessionId }) as const;
    // C9 / L5: cancelled, or the lease is not ours any more: never commit.
    if (signal.aborted) return skipped(lost.signal.aborted ? 'lease_lost' : 'cancelled');
    assertJsonValue(replacement, 'replacement');
    for (let n = 1; ; n++) {
      // Repeatable: a repeated commit of the attempt answers its first outcome (E3).
      const r = await call<CompressResponse>(`${at}/commit`, { token, body: { messages: replacement!, verbatim } }).catch(
        (err: unknown) => {
          if (err instanceof ConflictError) {
            // L6: taken over (409 lease_lost): nothing was written, as a heartbeat's lease_lost.
            if (err.code === 'lease_lost') return skipped('lease_lost');
            // The first of two sends (its answer lost) is still committing: ask again for its answer.
            if (err.code === 'commit_in_progress' && n < policy.maxAttempts) return;
          }
          throw err;
        },
      );
      if (r) {
        ended = true;
        return r;
      }
      await sleep(retryDelayMs(n, policy)!);
    }
  } finally {
    await stop();
    // I3: the lease is released whatever happened; a failed abort leaves it to expire with its TTL.
    if (!ended) await call(at, { token }, 'DELETE').catch(() => undefined);
  }
}

/**
 * L5, for a held attempt and a turn alike: one heartbeat now, then one per interval (the service's
 * heartbeatIntervalMs, which is L5's max(1 s, min(60 s, ttl / 2))), never two at once. A success resets the failure count; after
 * cap = max(1, floor(ttl / interval)) consecutive failures, or at once on a 409 (lease_lost: the
 * lease is not the attempt's), it aborts `lost` with the last heartbeat's error. Answers its stop, which waits for a
 * heartbeat in flight.
 */
export function keepAlive(
  { heartbeatIntervalMs: every, ttlMs }: { heartbeatIntervalMs: number; ttlMs: number },
  lost: AbortController,
  beat: (timeoutMs: number) => Promise<unknown>,
) {
  const cap = Math.max(1, Math.floor(ttlMs / every));
  const stopping = new AbortController();
  const beating = (async () => {
    for (let failures = 0; !stopping.signal.aborted;) {
      const started = Date.now();
      try {
        await beat(every);
        failures = 0;
      } catch (err) {
        // 409 (lease_lost, turn_superseded...): it is another's; no later heartbeat can help. The engine's signal carries the error.
        if (err instanceof ConflictError || ++failures >= cap) return lost.abort(err);
      }
      await sleep(every - (Date.now() - started), stopping.signal).catch(() => undefined);
    }
  })();
  return () => {
    stopping.abort();
    return beating;
  };
}

/** The structural part of OpenAI's client this uses: `openai.responses.compact` (no `openai` dependency). */
export interface ResponsesCompactClient {
  responses: {
    compact(
      body: { model: string; input: unknown; instructions?: string },
      options?: { signal?: AbortSignal },
    ): Promise<{ output?: unknown[] | null }>;
  };
}

export interface ResponsesCompactOptions {
  model: string;
  instructions?: string;
  /**
   * The snapshot as `input` (default: as stored). Items in the Agents SDK's own shape (`callId`,
   * `function_call_result`) need the Responses API's shape: pass the SDK's converter here.
   */
  toInput?: (items: Item[]) => unknown;
}

/**
 * An engine that compacts with OpenAI's `responses.compact`: its output (the user messages it keeps
 * and one `compaction` item with `encrypted_content`, stored verbatim, E7) is the replacement.
 */
export function responsesCompactEngine(openai: ResponsesCompactClient, { toInput, ...opts }: ResponsesCompactOptions): CompactionEngine {
  return async ({ messages, signal }) =>
    (await openai.responses.compact({ ...opts, input: toInput ? toInput(messages) : messages }, { signal })).output ?? [];
}
