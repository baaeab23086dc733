// One compaction attempt (SPEC C1-C13, I1-I4, P1, P2) with the service's engine: the in-process
// driver of the phases in ./phases/ (held-attempts.ts is the other). Reads straight down: guard →
// acquire → begin → engine → checks → commit. Everything after the lease is won belongs to an
// AttemptScope, closed in `finally` whatever happens (I3).
//
// Round trips on a rotation's critical path (P1): one Redis round to acquire; one DynamoDB
// update that issues the fence, records the attempt and marks "started", with the transcript
// read sent beside it when the container knows the session's record (else right after it); the
// L6 ownership check (a token-checked extend) from the fence on, beside what is left of the read;
// the commit transaction, which also marks "completed"; one Redis round to release.
import { DEFAULT_ATTEMPT_MAX_BYTES, DEFAULT_ATTEMPT_MAX_TOKENS, DEFAULT_LEASE_TTL_MS } from '../config.js';
import { errorFields } from '../errors.js';
import { adapterFor } from '../items/adapters.js';
import type { Item } from '../items/types.js';
import { LeaseRefresher } from '../lease/index.js';
import type { BegunAttempt } from '../lineage/types.js';
import { silentLogger } from '../logger.js';
import { errorText } from './attempt-scope.js';
import { snapshotBound } from './bounded-part.js';
import { CommitFence } from './commit-fence.js';
import { optionsFor } from './engine-options.js';
import { ActivityHeartbeat } from './heartbeat.js';
import { acquireLease, beginUnderLease, checkReplacement, commitReplacement, isEnding, reviewEnding, type Ending } from './phases/index.js';
import { type CompactionDeps, type CompactionOutcome, type CompactRequest, type NoopReason, type SkipReason } from './types.js';

export { DEFAULT_LEASE_TTL_MS };
export const DEFAULT_COMMIT_SAFETY_MARGIN_MS = 5_000;
/** A step of the attempt that the invocation's deadline overtook (P6). */
const LATE: unique symbol = Symbol('late');

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

  const asOutcome = async (e: Ending, known?: readonly Item[]): Promise<CompactionOutcome> => {
    switch (e.ended) {
      case 'skipped':
        return skipped(e.reason, e.sessionId, e.reason === 'adopted' || e.reason === 'stale' ? undefined : known, e.holder);
      case 'noop':
        return noop(e.reason, known ?? []);
      case 'disabled':
        return { outcome: 'disabled', reason: e.reason, sessionId: e.sessionId, warnings, ...(await inputIfAsked()) };
    }
  };

  // C13: a review fork never compacts, by rule: no lease, no engine, no write (phases/open.ts).
  if (req.origin === 'review') return asOutcome(await reviewEnding(store, ref));

  const phase = { lease: leaseApi, store, log };
  const bound = snapshotBound(deps.attemptBudget ?? { maxBytes: DEFAULT_ATTEMPT_MAX_BYTES, maxTokens: DEFAULT_ATTEMPT_MAX_TOKENS });
  /** P6: resolves LATE once the invocation's time is down to the commit margin (never without remainingTimeMs). */
  const beforeDeadline = <T>(work: Promise<T>): Promise<T | typeof LATE> => {
    const remaining = req.remainingTimeMs;
    // A deadline already behind (less than the margin left at the start) is C9's to enforce at the commit.
    if (!remaining || remaining() - marginMs <= 0) return work;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<typeof LATE>((resolve) => {
      timer = setTimeout(() => resolve(LATE), Math.max(0, remaining() - marginMs));
    });
    // A step left behind must not surface as an unhandled rejection; its result is never used.
    work.catch(() => undefined);
    return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
  };
  const late = async (input: readonly Item[]): Promise<CompactionOutcome> => {
    fence.tryCancel();
    warn(`not committed: the invocation's time ran down to the ${marginMs} ms safety margin before the summary was ready`);
    return cancelled(input);
  };
  const won = await acquireLease(phase, ref, { ttlMs, holder: req.holder });
  if (isEnding(won)) return asOutcome(won);
  const { scope, lease } = won;
  let failed = true;
  try {
    const outcome = await underLease();
    failed = false;
    return outcome;
  } finally {
    await scope.close(failed);
  }

  async function underLease(): Promise<CompactionOutcome> {
    // E6: the service's engine, so the begin checks the session's policy unless the caller forced it.
    // P6: the begin, the bounded read and the engine all end by the commit margin; a step still
    // running then is left behind and the attempt answers `cancelled` (C9), never a deadline 503.
    const opened = await beforeDeadline(beginUnderLease(phase, scope, ref, { ttlMs, bound, serviceEngine: req.force !== true }));
    if (opened === LATE) return late([]);
    if (isEnding(opened)) return asOutcome(opened);
    const { begun, snapshot: input, ownership, part } = opened;
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
      // P6: on a partial attempt everything after the part is kept verbatim already.
      keepLast: part ? 0 : req.keepLast,
      targetTokens: req.targetTokens,
      focus: req.focus,
      signal: AbortSignal.any([scope.leaseSignal, fence.signal]),
      deadline: remaining ? now() + remaining() - marginMs : undefined,
    });
    // The engine gets its own copy, so an engine that edits in place cannot fake "unchanged".
    const result = await beforeDeadline(engine.compress({ format, items: structuredClone(input) }, options));
    if (result === LATE) return late(input);
    if (!result || !Array.isArray(result.items)) throw new TypeError(`engine ${engine.name} returned no items array`);
    for (const w of result.warnings ?? []) warn(w);

    if (fence.cancelled) return cancelled(input);
    if (scope.leaseSignal.aborted) return skipped('lease_lost', ref.sessionId, input);
    if (result.aborted) {
      warn(`engine ${engine.name} aborted the compaction; nothing was written`);
      return noop('aborted', input);
    }
    // C7, C8 (phases/replacement.ts).
    const checked = await checkReplacement(input, result.items, adapter);
    if (isEnding(checked)) return asOutcome(checked, input);
    // P6: a partial summary takes the part's own sequence numbers, so it cannot hold more items than the part.
    if (part && checked.anchored.length > part.through - part.firstSeq + 1) {
      warn(
        `engine ${engine.name} returned more items than the ${part.through - part.firstSeq + 1}-item part it summarized; nothing was written`,
      );
      return noop('grown', input);
    }

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
      const started = now();
      const committed = await commitReplacement(
        store,
        scope,
        ref,
        begun,
        req.mode,
        checked.anchored,
        adapter,
        undefined,
        part ? { through: part.through } : undefined,
      );
      if (isEnding(committed)) return asOutcome(committed);
      const { deferred, generation, partial, ...rest } = committed;
      return {
        outcome: 'compressed',
        ...rest,
        ...(partial ? { partial: true as const, replaced: partial.replaced, remainingTokens: partial.remainingTokens } : {}),
        warnings,
        ...(deferred ? { deferred } : {}),
        ...(generation !== undefined ? { generation } : {}),
        commitMs: now() - started,
      };
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

  async function noop(reason: NoopReason, input: readonly Item[]): Promise<CompactionOutcome> {
    return { outcome: 'noop', reason, sessionId: ref.sessionId, warnings, ...(await inputIfAsked(input)) };
  }
  async function cancelled(input: readonly Item[]): Promise<CompactionOutcome> {
    return { outcome: 'cancelled', sessionId: ref.sessionId, warnings, ...(await inputIfAsked(input)) };
  }
}
