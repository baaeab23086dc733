// Phase 1 of an attempt, shared by both drivers (compact-session.ts in process, held-attempts.ts
// over HTTP): review refusal (C13), the lease decision (L2, C1, C2), the begin that issues the
// fence and records the attempt (L6, C4, C5, P1), and the L6 ownership check beside the snapshot
// read. Each step answers an Ending when the attempt stops there, else what the next one needs.
import { errorFields } from '../../errors.js';
import type { Item } from '../../items/types.js';
import type { Lease, LeaseApi, RefreshResult } from '../../lease/index.js';
import {
  AgentEnginePolicyError,
  AttemptInFlightError,
  ChainDeletedError,
  SessionEndedError,
  StaleSnapshotError,
} from '../../lineage/errors.js';
import type { BegunAttempt, BoundedSnapshot, HeldInfo, LineageStore, SnapshotBound } from '../../lineage/types.js';
import type { Logger } from '../../logger.js';
import { sessionKey, type SessionRef } from '../../session-ref.js';
import { AttemptScope } from '../attempt-scope.js';
import { ACTIVITY_LABELS, type DisabledReason, type NoopReason, type SkipReason } from '../types.js';

export interface PhaseDeps {
  lease: LeaseApi;
  store: LineageStore;
  log: Logger;
}

/** Where an attempt stopped short of a commit; each driver words it as its own answer. */
export type Ending =
  | { ended: 'skipped'; reason: SkipReason; sessionId: string; holder?: string | null }
  | { ended: 'noop'; reason: NoopReason }
  | { ended: 'disabled'; reason: DisabledReason; sessionId: string };

export function isEnding(x: unknown): x is Ending {
  return typeof x === 'object' && x !== null && 'ended' in x;
}

/** C4, C13: an ended session whose chain has no live tip (deleted) is never named as the one to continue on. */
export function chainDeleted(sessionId: string): never {
  throw new ChainDeletedError(sessionId);
}

/** C13: a review fork never compacts, by rule: no lease, no engine, no write; it is told the live session. */
export async function reviewEnding(store: LineageStore, ref: SessionRef): Promise<Ending> {
  const live = (await store.liveTip(ref)) ?? chainDeleted(ref.sessionId);
  return { ended: 'disabled', reason: 'review_origin', sessionId: live };
}

/**
 * L2/P2: one Redis round decides; a loser learns the holder from it and reads nothing else. A
 * winner gets the scope that gives everything back (I3): the driver closes it.
 */
export async function acquireLease(
  deps: PhaseDeps,
  ref: SessionRef,
  opts: { ttlMs: number; holder: string; token?: string },
): Promise<{ scope: AttemptScope; lease: Lease } | Ending> {
  let acquired: Awaited<ReturnType<LeaseApi['tryAcquire']>>;
  try {
    acquired = await deps.lease.tryAcquire(sessionKey(ref), opts);
  } catch (err) {
    // C2: any lease backend failure fails closed.
    deps.log.warn('compaction skipped: lease backend unavailable', { sessionKey: sessionKey(ref), error: errorFields(err) });
    return { ended: 'skipped', reason: 'lease_unavailable', sessionId: ref.sessionId };
  }
  if (!acquired.acquired) return { ended: 'skipped', reason: 'locked', sessionId: ref.sessionId, holder: acquired.holder };
  const { acquired: _won, ...lease } = acquired;
  return { scope: new AttemptScope(lease, deps, ref), lease };
}

export interface Opened {
  begun: BegunAttempt;
  /** Items 1..watermark, or the oldest bounded part of them (P6): what the replacement replaces. */
  snapshot: Item[];
  /** P6: set when the snapshot is only the oldest part; everything after `through` stays verbatim. */
  part?: BoundedSnapshot;
  /** The ownership check, already answered `refreshed` (the refresher's first refresh, L5). */
  ownership: Promise<RefreshResult>;
}

/**
 * Under the lease: the begin (fence, attempt record, "compaction started"), then the snapshot read
 * beside the L6 ownership check (P1). A holder that got its fence after its lease expired learns it
 * here, before anything runs on the snapshot (and before a held attempt is answered `started`).
 */
export async function beginUnderLease(
  deps: PhaseDeps,
  scope: AttemptScope,
  ref: SessionRef,
  opts: {
    ttlMs: number;
    held?: HeldInfo;
    serviceEngine?: boolean;
    bound?: SnapshotBound;
    expected?: { count: number; lastSeq?: number } | undefined;
  },
): Promise<Opened | Ending> {
  const { store, lease: leaseApi } = deps;
  const lease = scope.lease;
  let begun: BegunAttempt;
  try {
    begun = await store.beginAttempt(ref, {
      holder: lease.token,
      leaseExpiresAt: lease.expiresAt,
      activityLabel: ACTIVITY_LABELS.started,
      ...(opts.held ? { held: opts.held } : {}),
      ...(opts.serviceEngine ? { serviceEngine: true } : {}),
      ...(opts.bound ? { bound: opts.bound } : {}),
      ...(opts.expected !== undefined ? { expectedCount: opts.expected.count } : {}),
      ...(opts.expected?.lastSeq !== undefined ? { expectedLastSeq: opts.expected.lastSeq } : {}),
    });
  } catch (err) {
    // X2: the session is not the history the caller's receipt read (its begin's condition said so).
    if (err instanceof StaleSnapshotError) return { ended: 'skipped', reason: 'stale', sessionId: ref.sessionId };
    // E6: the session's policy keeps the service's engine off it; the begin's condition said so.
    if (err instanceof AgentEnginePolicyError) return { ended: 'disabled', reason: 'agent_engine', sessionId: ref.sessionId };
    // C4: the lease does not prove the parent is live; an ended parent is adopted, not compacted.
    if (err instanceof SessionEndedError)
      return { ended: 'skipped', reason: 'adopted', sessionId: err.liveSessionId ?? chainDeleted(ref.sessionId) };
    // A holder whose lease expired under it still has a live attempt record: it is compacting.
    if (err instanceof AttemptInFlightError) return { ended: 'skipped', reason: 'locked', sessionId: ref.sessionId, holder: err.holder };
    throw err;
  }
  scope.began(begun.attempt);
  // L6 beside the read (P1). A warm store sent the read beside the begin and hands it over here; a
  // cold one sends it now, first, so the extend's own client-side work overlaps the read.
  // P6: a bounded attempt reads only the oldest part (all of it when the session fits the bound).
  const reading = opts.bound
    ? store.readBoundedSnapshot(ref, begun, opts.bound)
    : store.readSnapshot(ref, begun).then((items) => ({ items, partial: false }) as const);
  const ownership = leaseApi.refresh(lease, opts.ttlMs);
  const [owned, read] = await Promise.all([ownership, reading]);
  if (!owned.refreshed)
    return { ended: 'skipped', reason: owned.reason === 'no_quorum' ? 'lease_unavailable' : 'lease_lost', sessionId: ref.sessionId };
  return { begun, snapshot: read.items, ownership, ...('through' in read && read.partial ? { part: read } : {}) };
}
