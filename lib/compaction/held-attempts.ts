// Held compaction attempts (SPEC E1-E8): the agent compacts with its own model between a begin
// and a commit sent in later requests, under the service's lease and fence. The second driver of
// the phases in ./phases/ (compact-session.ts is the first): the same begin, ownership check,
// C7/C8 checks and fenced commit, with the agent's engine in between.
//
// Nothing lives in a container between requests: the attempt id names the session, the store's
// attempt and its snapshot (generation, watermark); the lease token is a secret whose digest is
// the Redis value and the recorded holder (E8), so every token check is the lease's own L3 check
// or the store's condition on the holder, and neither the loser's answer nor the record shows it.
import { randomBytes } from 'node:crypto';
import { DEFAULT_ATTEMPT_MAX_BYTES, DEFAULT_ATTEMPT_MAX_TOKENS, DEFAULT_LEASE_TTL_MS } from '../config.js';
import { errorFields } from '../errors.js';
import { adapterFor } from '../items/adapters.js';
import type { Item } from '../items/types.js';
import { defaultRefreshInterval, type Lease, type LeaseApi } from '../lease/index.js';
import type { AttemptBudget, HeldOutcomeRecord, LineageStore, TurnCredential } from '../lineage/types.js';
import { silentLogger, type Logger } from '../logger.js';
import { sessionKey, type SessionRef } from '../session-ref.js';
import { AttemptScope } from './attempt-scope.js';
import { snapshotBound } from './bounded-part.js';
import { announceCommit, committedOf, countAttempt, counted, type CompactionFollowUps } from './follow-ups.js';
import { decodeAttemptId, encodeAttemptId, snapshotEnd, type AttemptKey } from './held-attempt-id.js';
import {
  endingAnswer,
  HeldAttemptRefused,
  heldBy,
  leaseValueOf,
  sameText,
  type AttemptView,
  type BeginAnswer,
  type HeldBeginRequest,
  type HeldRefusal,
} from './held-answers.js';
import {
  acquireLease,
  beginUnderLease,
  checkReplacement,
  commitReplacement,
  inPlaceGeneration,
  isEnding,
  reviewEnding,
} from './phases/index.js';
import { ACTIVITY_LABELS } from './types.js';

/** E2: "compaction in progress" reaches the store at most this often per attempt. */
export const HELD_MARK_EVERY_MS = 10_000;

export { decodeAttemptId, encodeAttemptId };

/** The follow-ups (metrics, SessionCompacted) are the service engine's own (follow-ups.ts). */
export interface HeldAttemptDeps extends CompactionFollowUps {
  lease: LeaseApi;
  store: LineageStore;
  logger?: Logger;
  /** Default lease TTL of a begin that names none. */
  leaseTtlMs?: number;
  /** P6: the most a begin hands the agent (the oldest part of a longer session); default lib/config.ts. */
  attemptBudget?: AttemptBudget;
  /** E2 throttle of the "in progress" mark (tests shorten it). */
  markEveryMs?: number;
  now?: () => number;
}

export * from './held-answers.js';

export class HeldAttempts {
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #markEveryMs: number;
  /** Last "in progress" mark per attempt this container sent or saw (E2: a skipped mark costs no call). */
  readonly #marked = new Map<string, number>();

  constructor(private readonly deps: HeldAttemptDeps) {
    this.#log = deps.logger ?? silentLogger;
    this.#now = deps.now ?? Date.now;
    this.#markEveryMs = deps.markEveryMs ?? HELD_MARK_EVERY_MS;
  }

  private get phase() {
    return { lease: this.deps.lease, store: this.deps.store, log: this.#log };
  }

  /** E1: lease (one Redis round), begin (fence, record, "started"), ownership check beside the snapshot read. */
  async begin(ref: SessionRef, req: HeldBeginRequest): Promise<BeginAnswer> {
    const answer = await this.beginAttempt(ref, req);
    // An attempt that ended at its begin is counted as the service engine's are (a started one, when it ends).
    if (answer.outcome !== 'started') countAttempt(this.deps, answer);
    return answer;
  }

  private async beginAttempt(ref: SessionRef, req: HeldBeginRequest): Promise<BeginAnswer> {
    // C13: a review fork takes no lease.
    if (req.origin === 'review') {
      const e = await reviewEnding(this.deps.store, ref);
      return { outcome: 'disabled', reason: 'review_origin', sessionId: e.ended === 'disabled' ? e.sessionId : ref.sessionId };
    }
    // X2: a receipt for another session (the conversation rotated since it was read) begins nothing.
    if (req.expected?.sessionId !== undefined && req.expected.sessionId !== ref.sessionId)
      return { outcome: 'skipped', reason: 'stale', sessionId: ref.sessionId };
    const ttlMs = req.ttlMs ?? this.deps.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    const token = randomBytes(32).toString('base64url');
    const won = await acquireLease(this.phase, ref, { ttlMs, holder: 'held', token: leaseValueOf(token) });
    if (isEnding(won)) return endingAnswer(won, ref.sessionId) as BeginAnswer;
    const { scope } = won;
    let keep = false;
    try {
      const at = this.#now();
      const bound = snapshotBound(
        this.deps.attemptBudget ?? { maxBytes: DEFAULT_ATTEMPT_MAX_BYTES, maxTokens: DEFAULT_ATTEMPT_MAX_TOKENS },
      );
      const held = { mode: req.mode, ttlMs, markedAt: at };
      const opened = await beginUnderLease(this.phase, scope, ref, { ttlMs, held, bound, expected: req.expected });
      if (isEnding(opened)) return endingAnswer(opened, ref.sessionId) as BeginAnswer;
      const { begun, snapshot, ownership, part } = opened;
      // P6: a partial snapshot ends at the part's last seq; the id carries it, so the commit replaces exactly that part.
      const through = part ? part.through : begun.attempt.watermark;
      if (snapshot.length === 0) return { outcome: 'noop', reason: 'nothing_to_compact', sessionId: ref.sessionId };
      const owned = await ownership;
      const attemptId = encodeAttemptId({
        sessionId: ref.sessionId,
        id: begun.attempt.attemptId,
        fence: begun.attempt.fence,
        generation: begun.session.generation,
        watermark: begun.attempt.watermark,
        ...(part ? { through: part.through } : {}),
        ttlMs,
        mode: req.mode,
        format: begun.session.format,
        ...(begun.session.conversationId !== undefined ? { conversationId: begun.session.conversationId } : {}),
      });
      this.#marked.set(attemptId, at);
      keep = true;
      return {
        outcome: 'started',
        attempt: {
          attemptId,
          leaseToken: token,
          sessionId: ref.sessionId,
          mode: req.mode,
          fence: begun.attempt.fence,
          throughSeq: through,
          ...(part ? { partial: true as const } : {}),
          ttlMs,
          heartbeatIntervalMs: defaultRefreshInterval(ttlMs),
          expiresAt: new Date(owned.refreshed ? owned.expiresAt : won.lease.expiresAt).toISOString(),
        },
        messages: snapshot,
      };
    } finally {
      // Started: the lease and the record stay the agent's until its commit, abort or expiry (E5).
      if (!keep) await scope.close(false);
    }
  }

  /** E2: a token-checked quorum extend; "in progress" reaches the store at most once per markEveryMs. */
  async heartbeat(ref: SessionRef, attemptId: string, token: string): Promise<AttemptView> {
    const k = this.keyOf(ref, attemptId);
    const holder = leaseValueOf(token);
    const r = await this.deps.lease.refresh(this.leaseOf(ref, holder, k), k.ttlMs);
    if (!r.refreshed) {
      if (r.reason === 'no_quorum') throw new HeldAttemptRefused('lease_unavailable', attemptId);
      throw new HeldAttemptRefused(await this.whyNotOurs(ref, k, attemptId, holder, true), attemptId);
    }
    const now = this.#now();
    const last = this.#marked.get(attemptId) ?? 0;
    if (now - last >= this.#markEveryMs) {
      this.#marked.set(attemptId, now);
      // Best effort (C5): a failing mark never affects the attempt.
      await this.deps.store
        .markHeldProgress(ref, k.id, holder, r.expiresAt, now - this.#markEveryMs)
        .catch((err: unknown) => this.#log.warn('held attempt: in-progress mark failed', { error: errorFields(err) }));
    }
    return { ...this.viewOf(attemptId, k), status: 'running', expiresAt: new Date(r.expiresAt).toISOString() };
  }

  /**
   * E3: the same fenced commit as the service engine's. A 400 (validation) happens before this is
   * called and leaves the attempt running; from the claim on, the attempt ends here, whatever the
   * outcome, and the lease is released in `finally` (I3).
   */
  async commit(
    ref: SessionRef,
    attemptId: string,
    token: string,
    replacement: Item[],
    opts: { correlationId?: string; turn?: TurnCredential; verbatim?: boolean } = {},
  ): Promise<Record<string, unknown>> {
    const k = this.keyOf(ref, attemptId);
    const holder = leaseValueOf(token);
    const { store, lease: leaseApi } = this.deps;
    const lease = this.leaseOf(ref, holder, k);
    const reading = store.readRange(ref, k.generation, snapshotEnd(k));
    reading.catch(() => undefined);
    // The claim (token-checked by the recorded holder), the ownership check and the snapshot, side by side.
    const [begun, owned] = await Promise.all([store.claimHeldCommit(ref, k.id, holder, k), leaseApi.refresh(lease, k.ttlMs)]);
    // Not ours to commit (ended, under way, wrong token): the extend above changed nothing that matters.
    if (!begun) return this.afterEnd(ref, k, attemptId, holder);
    const scope = new AttemptScope(lease, this.phase, ref);
    scope.began(begun.attempt);
    this.#marked.delete(attemptId);
    let failed = true;
    let ended: { answer: Record<string, unknown>; commitMs?: number };
    try {
      ended = await this.commitClaimed(ref, k, holder, scope, begun, owned, await reading, replacement, opts);
      failed = false;
    } finally {
      await scope.close(failed);
    }
    // Issue 14 for the agent's engine: counted, and a commit announced once the lease is free.
    const { answer, commitMs } = ended;
    countAttempt(this.deps, counted(answer), commitMs);
    if (answer.outcome === 'compressed') await announceCommit(this.deps, ref.tenantId, committedOf(answer), opts.correlationId);
    return answer;
  }

  private async commitClaimed(
    ref: SessionRef,
    k: AttemptKey,
    holder: string,
    scope: AttemptScope,
    begun: NonNullable<Awaited<ReturnType<LineageStore['claimHeldCommit']>>>,
    owned: Awaited<ReturnType<LeaseApi['refresh']>>,
    snapshot: Item[],
    replacement: Item[],
    { turn, verbatim }: { turn?: TurnCredential; verbatim?: boolean },
  ): Promise<{ answer: Record<string, unknown>; commitMs?: number }> {
    const { store } = this.deps;
    const end = async (answer: Record<string, unknown>, status: HeldOutcomeRecord['status'], label: string) => {
      await store.endHeldAttempt(ref, k.id, holder, { activityLabel: label, outcome: { status, answer, holder }, claimed: true });
      return { answer };
    };
    // L6: a lease no longer ours never commits (E2), whatever the fence would say.
    if (!owned.refreshed) {
      const answer = {
        outcome: 'skipped',
        reason: owned.reason === 'no_quorum' ? 'lease_unavailable' : 'lease_lost',
        sessionId: ref.sessionId,
      };
      return end(answer, 'lost', ACTIVITY_LABELS.failed);
    }
    const adapter = adapterFor(k.format);
    const checked = await checkReplacement(snapshot, replacement, adapter, verbatim);
    if (isEnding(checked)) return end(endingAnswer(checked, ref.sessionId), 'committed', ACTIVITY_LABELS.completed);
    // P6: the begin handed out the oldest part only: replace exactly it.
    const partial = k.through !== undefined ? { through: k.through } : undefined;
    const first = partial
      ? {
          outcome: 'compressed',
          mode: 'in_place',
          sessionId: ref.sessionId,
          previousSessionId: ref.sessionId,
          generation: begun.session.generation,
          partial: true,
        }
      : k.mode === 'rotate'
        ? { outcome: 'compressed', mode: 'rotate', sessionId: begun.attempt.pendingChildId, previousSessionId: ref.sessionId }
        : {
            outcome: 'compressed',
            mode: 'in_place',
            sessionId: ref.sessionId,
            previousSessionId: ref.sessionId,
            generation: inPlaceGeneration(begun),
          };
    const record = store.heldOutcomeRow(ref, k.id, { status: 'committed', answer: { ...first, warnings: [] }, holder });
    const started = this.#now();
    const committed = await commitReplacement(store, scope, ref, begun, k.mode, checked.anchored, adapter, record, partial, turn);
    const commitMs = this.#now() - started;
    if (isEnding(committed)) return { answer: endingAnswer(committed, ref.sessionId) };
    if (committed.deferred) {
      const task = committed.deferred;
      store
        .runTask(task)
        .catch((err: unknown) => this.#log.warn('deferred archive failed; the sweep will run it', { error: errorFields(err) }));
    }
    const answer = {
      ...first,
      sessionId: committed.sessionId,
      ...(committed.conversationId !== undefined ? { conversationId: committed.conversationId } : {}),
      warnings: [],
      items: committed.items,
      ...(committed.partial ? { replaced: committed.partial.replaced, remainingTokens: committed.partial.remainingTokens } : {}),
    };
    return { answer, commitMs };
  }

  /** E4: the agent's `finally`. Token-checked release, "compaction failed", nothing else written. */
  async abort(ref: SessionRef, attemptId: string, token: string): Promise<Record<string, unknown>> {
    const k = this.keyOf(ref, attemptId);
    const holder = leaseValueOf(token);
    const answer = { outcome: 'skipped', reason: 'cancelled', sessionId: ref.sessionId };
    const ended = await this.deps.store.endHeldAttempt(ref, k.id, holder, {
      activityLabel: ACTIVITY_LABELS.failed,
      outcome: { status: 'cancelled', answer, holder },
      claimed: false,
    });
    if (!ended) {
      const prior = await this.deps.store.readHeldOutcome(ref, k.id);
      if (prior && !heldBy(prior, holder)) throw new HeldAttemptRefused('token_invalid', attemptId);
      if (prior?.status === 'committed') throw new HeldAttemptRefused('committed', attemptId);
      if (!prior) {
        const why = await this.whyNotOurs(ref, k, attemptId, holder, false);
        if (why !== 'lease_lost') throw new HeldAttemptRefused(why, attemptId);
      }
    }
    this.#marked.delete(attemptId);
    await this.deps.lease.release(this.leaseOf(ref, holder, k)).catch((err: unknown) => {
      this.#log.warn('held attempt: lease release failed; it expires with its TTL', { error: errorFields(err) });
    });
    // The attempt ended here (not an abort repeated): counted as a cancelled attempt of the service's engine is.
    if (ended) countAttempt(this.deps, { outcome: 'cancelled' });
    return answer;
  }

  /** The attempt as it stands, without its token (E8). */
  async status(ref: SessionRef, attemptId: string): Promise<AttemptView> {
    const k = this.keyOf(ref, attemptId);
    const { session, prior } = await this.recordAndOutcome(ref, k);
    const view = this.viewOf(attemptId, k);
    if (prior) return { ...view, status: prior.status, outcome: prior.answer };
    if (!session || k.fence > (session.fence ?? 0)) throw new HeldAttemptRefused('not_found', attemptId);
    const current = session.attempt;
    if (current?.attemptId === k.id) {
      const expired = current.leaseExpiresAt < this.#now() && !(await this.deps.lease.holderOf(sessionKey(ref)).catch(() => null));
      return { ...view, status: expired ? 'expired' : 'running', expiresAt: new Date(current.leaseExpiresAt).toISOString() };
    }
    return { ...view, status: (session.fence ?? 0) > k.fence ? 'lost' : 'expired' };
  }

  /** A commit whose claim was refused: a repeat replays the first outcome (E3); else why it is not ours. */
  private async afterEnd(ref: SessionRef, k: AttemptKey, attemptId: string, holder: string): Promise<Record<string, unknown>> {
    const prior = await this.deps.store.readHeldOutcome(ref, k.id);
    if (prior) return this.replayOf(ref, attemptId, holder, prior);
    const why = await this.whyNotOurs(ref, k, attemptId, holder, false);
    // A commit of this attempt ended between the claim and the reads (a retry racing its first try): replay it.
    if (why === 'committed' || why === 'lease_lost') {
      const ended = await this.deps.store.readHeldOutcome(ref, k.id);
      if (ended) return this.replayOf(ref, attemptId, holder, ended);
    }
    throw new HeldAttemptRefused(why, attemptId);
  }

  /** E3 replay, E8: only to the attempt's own token (an outcome written before holders were kept replays as it did). */
  private replayOf(ref: SessionRef, attemptId: string, holder: string, prior: HeldOutcomeRecord): Record<string, unknown> {
    if (!heldBy(prior, holder)) throw new HeldAttemptRefused('token_invalid', attemptId);
    return prior.status !== 'cancelled' ? prior.answer : { outcome: 'skipped', reason: 'cancelled', sessionId: ref.sessionId };
  }

  /**
   * The session record and the attempt's outcome row. The two are read side by side, yet the commit
   * clears the attempt and writes its outcome in one transaction: a record that no longer shows the
   * attempt beside no outcome may be a commit that landed between the two reads, so the outcome is
   * read once more, after the record (a concurrent repeat of a commit must not be told lease_lost).
   */
  private async recordAndOutcome(ref: SessionRef, k: AttemptKey) {
    const { store } = this.deps;
    const [session, first] = await Promise.all([store.getSession(ref), store.readHeldOutcome(ref, k.id)]);
    const gone = session !== null && k.fence <= (session.fence ?? 0) && session.attempt?.attemptId !== k.id;
    const prior = first ?? (gone ? await store.readHeldOutcome(ref, k.id) : null);
    return { session, prior };
  }

  /** Reads the record to tell an unknown attempt (404), a wrong token (403), a commit under way and a lost lease apart. */
  private async whyNotOurs(ref: SessionRef, k: AttemptKey, attemptId: string, holder: string, endIfLost: boolean): Promise<HeldRefusal> {
    const { session, prior } = await this.recordAndOutcome(ref, k);
    if (prior && !heldBy(prior, holder)) return 'token_invalid';
    if (prior?.status === 'committed') return 'committed';
    if (prior) return 'lease_lost';
    if (!session || k.fence > (session.fence ?? 0)) return 'not_found';
    const current = session.attempt;
    if (current?.attemptId !== k.id) return 'lease_lost';
    // E8: an id whose fields were changed names no attempt (the claim refused it for that).
    const named =
      (session.fence ?? 0) === k.fence &&
      current.watermark === k.watermark &&
      session.generation === k.generation &&
      current.held?.mode === k.mode &&
      current.held.ttlMs === k.ttlMs;
    if (!named) return 'not_found';
    if (!sameText(current.holder, holder)) return 'token_invalid';
    if (current.held?.committing !== undefined) return 'commit_in_progress';
    // Our token, our record, and the lease is not ours: lost. That attempt never commits (E2).
    if (endIfLost) {
      const answer = { outcome: 'skipped', reason: 'lease_lost', sessionId: ref.sessionId };
      await this.deps.store
        .endHeldAttempt(ref, k.id, holder, {
          activityLabel: ACTIVITY_LABELS.failed,
          outcome: { status: 'lost', answer, holder },
          claimed: false,
        })
        .catch((err: unknown) => this.#log.warn('held attempt: could not end a lost attempt; the sweep will', { error: errorFields(err) }));
    }
    return 'lease_lost';
  }

  private keyOf(ref: SessionRef, attemptId: string): AttemptKey {
    const k = decodeAttemptId(attemptId);
    if (!k || k.sessionId !== ref.sessionId) throw new HeldAttemptRefused('not_found', attemptId);
    return k;
  }

  private leaseOf(ref: SessionRef, holder: string, k: AttemptKey): Lease {
    return { sessionKey: sessionKey(ref), token: holder, expiresAt: 0, ttlMs: k.ttlMs };
  }

  private viewOf(attemptId: string, k: AttemptKey): AttemptView {
    return {
      attemptId,
      sessionId: k.sessionId,
      mode: k.mode,
      fence: k.fence,
      throughSeq: snapshotEnd(k),
      ttlMs: k.ttlMs,
      heartbeatIntervalMs: defaultRefreshInterval(k.ttlMs),
    };
  }
}
