// One compaction attempt (SPEC C1-C13, I1-I4, P1, P2). Reads straight down: guard → acquire →
// begin → engine → checks → commit. Everything after the lease is won belongs to an
// AttemptScope, closed in `finally` whatever happens (I3).
//
// Round trips on a rotation's critical path (P1): one Redis round to acquire; one DynamoDB
// update that issues the fence, records the attempt and marks "started", with the transcript
// read sent beside it when the container knows the session's record (else right after it); the
// L6 ownership check (a token-checked extend) from the fence on, beside what is left of the read;
// the commit transaction, which also marks "completed"; one Redis round to release.
import { DEFAULT_LEASE_TTL_MS } from '../config.js';
import { errorFields } from '../errors.js';
import { adapterFor } from '../items/adapters.js';
import { estimateItemTokens, loadTokenCounter } from '../items/tokens.js';
import type { Item } from '../items/types.js';
import { LeaseRefresher } from '../lease/index.js';
import {
  AttemptInFlightError,
  ChainDeletedError,
  FenceStaleError,
  RotationLostError,
  SessionEndedError,
  StaleSnapshotError,
} from '../lineage/errors.js';
import type { BegunAttempt } from '../lineage/types.js';
import { silentLogger } from '../logger.js';
import { sessionKey } from '../session-ref.js';
import { AttemptScope, errorText } from './attempt-scope.js';
import { CommitFence } from './commit-fence.js';
import { optionsFor } from './engine-options.js';
import { ActivityHeartbeat } from './heartbeat.js';
import { restoreHumanAnchor } from './human-anchor.js';
import { noopReason } from './result-check.js';
import {
  ACTIVITY_LABELS,
  type CompactionDeps,
  type CompactionOutcome,
  type CompactRequest,
  type NoopReason,
  type SkipReason,
} from './types.js';

export { DEFAULT_LEASE_TTL_MS };
export const DEFAULT_COMMIT_SAFETY_MARGIN_MS = 5_000;

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
  const log = deps.logger ?? silentLogger;
  const now = deps.now ?? Date.now;
  const ttlMs = deps.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  const marginMs = deps.commitSafetyMarginMs ?? DEFAULT_COMMIT_SAFETY_MARGIN_MS;
  const fence = control.commitFence ?? new CommitFence();
  const warnings: string[] = [];
  // C12: every warning reaches the caller; a throwing onWarning aborts the attempt (no commit).
  const warn = (w: string): void => {
    warnings.push(w);
    deps.onWarning?.(w);
  };

  // C1: only in-process callers that ask get the input back; the read never writes.
  const inputIfAsked = async (known?: readonly Item[]): Promise<{ items?: Item[] }> => {
    if (!req.returnInput) return {};
    if (known) return { items: structuredClone([...known]) };
    try {
      return { items: await store.readAll(ref) };
    } catch (err) {
      warn(`could not read the session's items: ${errorText(err)}`);
      return { items: [] };
    }
  };
  const skipped = async (
    reason: SkipReason,
    sessionId: string,
    known?: readonly Item[],
    holder?: string | null,
  ): Promise<CompactionOutcome> => ({
    outcome: 'skipped',
    reason,
    sessionId,
    warnings,
    ...(holder !== undefined ? { holder } : {}),
    ...(await inputIfAsked(known)),
  });

  // C13: a review fork never compacts, by rule: no lease, no engine, no write. It is told the
  // session to continue on: the live tip when this one has ended (F1), read from the records alone.
  if (req.origin === 'review') {
    const live = (await store.liveTip(ref)) ?? chainDeleted(ref.sessionId);
    return { outcome: 'disabled', reason: 'review_origin', sessionId: live, warnings, ...(await inputIfAsked()) };
  }

  // L2/P2: one Redis round decides; a loser learns the holder from it and reads nothing else.
  let acquired: Awaited<ReturnType<typeof leaseApi.tryAcquire>>;
  try {
    acquired = await leaseApi.tryAcquire(sessionKey(ref), { ttlMs, holder: req.holder });
  } catch (err) {
    // C2: any lease backend failure fails closed.
    log.warn('compaction skipped: lease backend unavailable', { sessionKey: sessionKey(ref), error: errorFields(err) });
    return skipped('lease_unavailable', ref.sessionId);
  }
  if (!acquired.acquired) return skipped('locked', ref.sessionId, undefined, acquired.holder);

  const { acquired: _won, ...lease } = acquired;
  const scope = new AttemptScope(lease, { lease: leaseApi, store, log }, ref);
  let failed = true;
  try {
    const outcome = await underLease();
    failed = false;
    return outcome;
  } finally {
    await scope.close(failed);
  }

  async function underLease(): Promise<CompactionOutcome> {
    let begun: BegunAttempt;
    try {
      begun = await store.beginAttempt(ref, {
        holder: lease.token,
        leaseExpiresAt: lease.expiresAt,
        activityLabel: ACTIVITY_LABELS.started,
      });
    } catch (err) {
      // C4: the lease does not prove the parent is live; an ended parent is adopted, not compacted.
      if (err instanceof SessionEndedError) return skipped('adopted', err.liveSessionId ?? chainDeleted(ref.sessionId));
      // A holder whose lease expired under it still has a live attempt record: it is compacting.
      if (err instanceof AttemptInFlightError) return skipped('locked', ref.sessionId, undefined, err.holder);
      throw err;
    }
    scope.began(begun.attempt);

    // L6: prove we still own the lease once the fence is issued (after Redis said yes), beside the
    // read (P1). A warm store sent the read beside the begin and hands it over here; a cold one
    // sends it now, first, so the extend's own client-side work overlaps the read, not precedes it.
    const snapshot = store.readSnapshot(ref, begun);
    const ownership = leaseApi.refresh(lease, ttlMs);
    const [owned, input] = await Promise.all([ownership, snapshot]);
    if (!owned.refreshed)
      return owned.reason === 'no_quorum' ? skipped('lease_unavailable', ref.sessionId) : skipped('lease_lost', ref.sessionId);
    if (input.length === 0) return noop('nothing_to_compact', []);

    // The ownership check was the refresher's first refresh (L5 "once immediately"): no second round.
    startKeepAlive(
      begun,
      ownership.then((r) => r.refreshed),
    );
    if (fence.cancelled) return cancelled(input);

    // C6: exactly one call, only declared options; its errors propagate (finally cleans up).
    const format = begun.session.format;
    const adapter = adapterFor(format);
    const remaining = req.remainingTimeMs;
    const options = optionsFor(engine, {
      keepLast: req.keepLast,
      targetTokens: req.targetTokens,
      focus: req.focus,
      signal: AbortSignal.any([scope.leaseSignal, fence.signal]),
      deadline: remaining ? now() + remaining() - marginMs : undefined,
    });
    // The engine gets its own copy, so an engine that edits in place cannot fake "unchanged".
    const result = await engine.compress({ format, items: structuredClone(input) }, options);
    if (!result || !Array.isArray(result.items)) throw new TypeError(`engine ${engine.name} returned no items array`);
    for (const w of result.warnings ?? []) warn(w);

    if (fence.cancelled) return cancelled(input);
    if (scope.leaseSignal.aborted) return skipped('lease_lost', ref.sessionId, input);
    if (result.aborted) {
      warn(`engine ${engine.name} aborted the compaction; nothing was written`);
      return noop('aborted', input);
    }
    // C7 on the raw result, then C8, then C7 again: restoring the anchor can rebuild the input.
    if (result.items.length === 0) return noop('empty_result', input);
    const anchored = restoreHumanAnchor(result.items, input, adapter).items;
    const noopWhy = noopReason(input, anchored, await loadTokenCounter(), adapter);
    if (noopWhy) return noop(noopWhy, input);

    // C9: Lambda cancels itself before commit when too little invocation time is left.
    if (remaining) {
      const left = remaining();
      if (left < marginMs && fence.tryCancel() === 'cancelled') {
        warn(`not committed: ${left} ms of invocation time left, below the ${marginMs} ms safety margin`);
        return cancelled(input);
      }
    }
    if (!fence.enterCommit()) return cancelled(input);
    try {
      await scope.enterCommit();
      return await commit(begun, anchored, adapter);
    } finally {
      fence.finishCommit();
    }
  }

  /** L5 refresher (its refreshes keep the attempt record's expiry in step) and the C5 heartbeat. */
  function startKeepAlive(begun: BegunAttempt, initial: Promise<boolean>): void {
    let recorded = begun.attempt.leaseExpiresAt;
    const refresher = (deps.createRefresher ?? ((o) => new LeaseRefresher(o)))({
      refresh: async () => {
        const r = await leaseApi.refresh(lease, ttlMs);
        // The sweep (S1) must never take a live, refreshed attempt for an abandoned one.
        if (r.refreshed && r.expiresAt > recorded) {
          await store.extendAttempt(ref, begun.attempt, r.expiresAt).then(
            (ok) => {
              if (ok) recorded = r.expiresAt;
            },
            (err: unknown) => log.warn('could not extend the attempt record', { error: errorFields(err) }),
          );
        }
        return r.refreshed;
      },
      initial,
      ttlMs,
      ...(deps.refreshIntervalMs !== undefined ? { intervalMs: deps.refreshIntervalMs } : {}),
      // P6 (issue 35 item 3): past the commit margin the attempt cannot commit (C9) and its request is
      // about to be answered, so nothing refreshes the lease or the record's expiry any longer.
      ...(req.remainingTimeMs ? { stopAfterMs: req.remainingTimeMs() - marginMs } : {}),
      onGiveUp: (reason) => log.warn('lease refresher gave up; the attempt will not commit', { reason }),
    });
    scope.keepAlive(refresher, new ActivityHeartbeat((label) => store.touchActivity(ref, label), deps.heartbeatIntervalMs));
  }

  async function commit(begun: BegunAttempt, compacted: Item[], adapter: ReturnType<typeof adapterFor>): Promise<CompactionOutcome> {
    const input = {
      compacted,
      tokenEstimates: compacted.map((it) => estimateItemTokens(it, adapter)),
      activityLabel: ACTIVITY_LABELS.completed,
    };
    const started = now();
    try {
      if (req.mode === 'rotate') {
        const r = await store.commitRotation(ref, begun, input);
        scope.markCommitted();
        const commitMs = now() - started;
        return {
          outcome: 'compressed',
          mode: 'rotate',
          sessionId: r.child.sessionId,
          previousSessionId: ref.sessionId,
          items: r.items,
          warnings,
          commitMs,
          ...(r.child.conversationId !== undefined ? { conversationId: r.child.conversationId } : {}),
        };
      }
      const r = await store.commitInPlace(ref, begun, input);
      scope.markCommitted();
      return {
        outcome: 'compressed',
        mode: 'in_place',
        sessionId: ref.sessionId,
        previousSessionId: ref.sessionId,
        items: r.items,
        warnings,
        deferred: r.archive,
        generation: r.session.generation,
        commitMs: now() - started,
        ...(r.session.conversationId !== undefined ? { conversationId: r.session.conversationId } : {}),
      };
    } catch (err) {
      // L6 / C4: the store refused a stale or already-rotated commit; report the live session.
      if (err instanceof RotationLostError || err instanceof SessionEndedError)
        return skipped('adopted', err.liveSessionId ?? chainDeleted(ref.sessionId));
      if (err instanceof FenceStaleError) return skipped('lease_lost', ref.sessionId);
      // A6: an item the engine read was popped meanwhile; committing would bring it back.
      if (err instanceof StaleSnapshotError) return skipped('stale', ref.sessionId);
      throw err;
    }
  }

  async function noop(reason: NoopReason, input: readonly Item[]): Promise<CompactionOutcome> {
    return { outcome: 'noop', reason, sessionId: ref.sessionId, warnings, ...(await inputIfAsked(input)) };
  }
  async function cancelled(input: readonly Item[]): Promise<CompactionOutcome> {
    return { outcome: 'cancelled', sessionId: ref.sessionId, warnings, ...(await inputIfAsked(input)) };
  }
}

/** C4, C13: an ended session whose chain has no live tip (deleted) is never named as the one to continue on. */
function chainDeleted(sessionId: string): never {
  throw new ChainDeletedError(sessionId);
}
