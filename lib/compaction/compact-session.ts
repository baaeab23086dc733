// One compaction attempt (SPEC C1-C13, I1-I4): lease, snapshot, engine once, checks, fenced
// commit. Everything after the lease is acquired runs inside try/finally so the heartbeat
// and refresher stop and the lease is released whatever happens (I3).
import { Logger } from '@aws-lambda-powertools/logger';
import { LeaseRefresher, type Lease } from '../lease/index.js';
import { FenceStaleError, RotationLostError, SessionEndedError } from '../lineage/errors.js';
import type { BegunAttempt } from '../lineage/types.js';
import type { Message } from '../messages.js';
import { sessionKey } from '../session-ref.js';
import { CommitFence } from './commit-fence.js';
import { optionsFor } from './engine-options.js';
import { ActivityHeartbeat } from './heartbeat.js';
import { restoreHumanAnchor } from './human-anchor.js';
import { noopReason } from './result-check.js';
import type {
  AttemptRefresher,
  CompactionDeps,
  CompactionLogger,
  CompactionOutcome,
  CompactRequest,
  SkipReason,
} from './types.js';

export const DEFAULT_LEASE_TTL_MS = 30_000;
export const DEFAULT_COMMIT_SAFETY_MARGIN_MS = 5_000;

let defaultLogger: CompactionLogger | undefined;
function fallbackLogger(): CompactionLogger {
  defaultLogger ??= new Logger({ serviceName: 'session-lineage', logLevel: 'WARN' });
  return defaultLogger;
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/**
 * Runs one attempt. Returns an outcome for every rule-defined ending; throws only for errors
 * the rules say propagate (engine errors, unexpected store errors, a throwing onWarning),
 * always after the lease was released.
 */
export async function compactSession(
  deps: CompactionDeps,
  req: CompactRequest,
  control: { commitFence?: CommitFence } = {},
): Promise<CompactionOutcome> {
  const { lease: leaseApi, store, engine } = deps;
  const ref = req.ref;
  const log = deps.logger ?? fallbackLogger();
  const now = deps.now ?? Date.now;
  const ttlMs = deps.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  const marginMs = deps.commitSafetyMarginMs ?? DEFAULT_COMMIT_SAFETY_MARGIN_MS;
  const warnings: string[] = [];
  // C12: every warning reaches the caller; a throwing onWarning aborts the attempt (no commit).
  const warn = (w: string): void => {
    warnings.push(w);
    deps.onWarning?.(w);
  };

  // Pre-attempt outcomes have no snapshot yet: report the stored input (a read, never a write).
  const readInput = async (): Promise<Message[]> => {
    try {
      return await store.readMessages(ref);
    } catch (err) {
      warn(`could not read the session's messages: ${errorText(err)}`);
      return [];
    }
  };

  // C13: a review fork never compacts, by rule: no lease, no engine, no write.
  if (req.origin === 'review') {
    return { outcome: 'disabled', reason: 'review_origin', sessionId: ref.sessionId, messages: await readInput(), warnings };
  }

  let acquired: Awaited<ReturnType<typeof leaseApi.tryAcquire>>;
  try {
    acquired = await leaseApi.tryAcquire(sessionKey(ref), { ttlMs, holder: req.holder });
  } catch (err) {
    // C2: any lease backend failure fails closed.
    log.warn('compaction skipped: lease backend unavailable', { sessionKey: sessionKey(ref), error: errorText(err) });
    return skipped('lease_unavailable', ref.sessionId, await readInput());
  }
  if (!acquired.acquired) {
    // C1: lost the race; the compressor is never called and nothing is written.
    return skipped('locked', ref.sessionId, await readInput(), acquired.holder);
  }
  const { acquired: _flag, ...lease } = acquired;
  const held: Lease = lease;

  const fence = control.commitFence ?? new CommitFence();
  let begun: BegunAttempt | undefined;
  let refresher: AttemptRefresher | undefined;
  let heartbeat: ActivityHeartbeat | undefined;
  let committed = false;
  let failed = true;
  try {
    const outcome = await attempt();
    failed = false;
    return outcome;
  } finally {
    await heartbeat?.stop(failed ? 'failed' : 'completed');
    try {
      await refresher?.stop();
    } catch (err) {
      log.error('lease refresher failed to stop', { error: errorText(err) });
    }
    if (begun && !committed) {
      try {
        await store.abandonAttempt(ref, begun.attempt);
      } catch (err) {
        log.error('could not abandon the compaction attempt; the sweep will', { error: errorText(err) });
      }
    }
    try {
      const r = await leaseApi.release(held);
      if (!r.released) log.warn('lease not released', { sessionKey: held.sessionKey, reason: r.reason });
    } catch (err) {
      log.error('lease release failed; it expires with its TTL', { sessionKey: held.sessionKey, error: errorText(err) });
    }
  }

  function skipped(reason: SkipReason, sessionId: string, messages: Message[], holder?: string | null): CompactionOutcome {
    return { outcome: 'skipped', reason, sessionId, messages, warnings, ...(holder !== undefined ? { holder } : {}) };
  }

  async function liveSessionId(known: string | null): Promise<string> {
    if (known) return known;
    const chain = await store.lineage(ref);
    return chain.at(-1)?.sessionId ?? ref.sessionId;
  }

  async function attempt(): Promise<CompactionOutcome> {
    try {
      begun = await store.beginAttempt(ref, { holder: held.token, fence: held.fence, leaseExpiresAt: held.expiresAt });
    } catch (err) {
      // C4: the lease does not prove the parent is live; an ended parent is adopted, not compacted.
      if (err instanceof SessionEndedError) {
        return skipped('adopted', await liveSessionId(err.liveSessionId), await readInput());
      }
      if (err instanceof FenceStaleError) return skipped('lease_lost', ref.sessionId, await readInput());
      throw err;
    }
    const input = begun.messages;
    if (begun.session.childSessionId || begun.session.endedAt) {
      return skipped('adopted', await liveSessionId(begun.session.childSessionId ?? null), input);
    }
    const unchanged = (): Message[] => structuredClone(input);
    if (input.length === 0) return { outcome: 'noop', reason: 'nothing_to_compact', sessionId: ref.sessionId, messages: [], warnings };

    refresher = (deps.createRefresher ?? ((o) => new LeaseRefresher(o)))({
      refresh: async () => {
        const r = await leaseApi.refresh(held, ttlMs);
        // Keep the attempt record's expiry in step with the lease, so the sweep (S1) never
        // takes a live, refreshed attempt for an abandoned one.
        if (r.refreshed && begun) {
          await store.extendAttempt?.(ref, begun.attempt, r.expiresAt).catch((err: unknown) => {
            log.warn('could not extend the attempt record', { error: errorText(err) });
          });
        }
        return r.refreshed;
      },
      ttlMs,
      ...(deps.refreshIntervalMs !== undefined ? { intervalMs: deps.refreshIntervalMs } : {}),
      onGiveUp: (reason) => log.warn('lease refresher gave up; the attempt will not commit', { reason }),
    });
    refresher.start();
    heartbeat = new ActivityHeartbeat((label) => store.touchActivity(ref, label), deps.heartbeatIntervalMs);
    heartbeat.start();

    if (fence.cancelled) return cancelled();

    // C6: exactly one call, only declared options; its errors propagate (finally cleans up).
    const remaining = req.remainingTimeMs;
    const options = optionsFor(engine, {
      keepLast: req.keepLast,
      targetTokens: req.targetTokens,
      focus: req.focus,
      signal: AbortSignal.any([refresher.signal, fence.signal]),
      deadline: remaining ? now() + remaining() - marginMs : undefined,
    });
    // The engine gets its own copy, so an engine that edits in place cannot fake "unchanged".
    const result = await engine.compress(structuredClone(input), options);
    if (!result || !Array.isArray(result.messages)) throw new TypeError(`engine ${engine.name} returned no messages array`);
    for (const w of result.warnings ?? []) warn(w);

    if (fence.cancelled) return cancelled();
    if (refresher.signal.aborted) return skipped('lease_lost', ref.sessionId, unchanged());
    if (result.aborted) {
      warn(`engine ${engine.name} aborted the compaction; nothing was written`);
      return { outcome: 'noop', reason: 'aborted', sessionId: ref.sessionId, messages: unchanged(), warnings };
    }
    // C7 on the raw result, then C8, then C7 again: restoring the anchor can rebuild the input.
    if (result.messages.length === 0) return noop('empty_result');
    const anchored = restoreHumanAnchor(result.messages, input).messages;
    const noopWhy = noopReason(input, anchored);
    if (noopWhy) return noop(noopWhy);

    // C9: Lambda cancels itself before commit when too little invocation time is left.
    if (remaining) {
      const left = remaining();
      if (left < marginMs && fence.tryCancel() === 'cancelled') {
        warn(`not committed: ${left} ms of invocation time left, below the ${marginMs} ms safety margin`);
        return cancelled();
      }
    }
    if (!fence.enterCommit()) return cancelled();
    try {
      return await commit(begun, anchored);
    } finally {
      fence.finishCommit();
    }

    function noop(reason: 'empty_result' | 'unchanged' | 'grown'): CompactionOutcome {
      return { outcome: 'noop', reason, sessionId: ref.sessionId, messages: unchanged(), warnings };
    }
    function cancelled(): CompactionOutcome {
      return { outcome: 'cancelled', sessionId: ref.sessionId, messages: unchanged(), warnings };
    }
  }

  async function commit(b: BegunAttempt, compacted: Message[]): Promise<CompactionOutcome> {
    try {
      // The session that lives on: the new child after a rotation, the same session in place.
      const { sessionId, messages } =
        req.mode === 'rotate'
          ? await store.commitRotation(ref, b.attempt, compacted).then((r) => ({ sessionId: r.child.sessionId, messages: r.messages }))
          : await store.commitInPlace(ref, b.attempt, compacted).then((r) => ({ sessionId: r.session.sessionId, messages: r.messages }));
      committed = true;
      return { outcome: 'compressed', mode: req.mode, sessionId, previousSessionId: ref.sessionId, messages, warnings };
    } catch (err) {
      // L6 / C4: the store refused a stale or already-rotated commit; report the live session.
      if (err instanceof RotationLostError || err instanceof SessionEndedError) {
        return skipped('adopted', await liveSessionId(err.liveSessionId), structuredClone(b.messages));
      }
      if (err instanceof FenceStaleError) return skipped('lease_lost', ref.sessionId, structuredClone(b.messages));
      throw err;
    }
  }
}
