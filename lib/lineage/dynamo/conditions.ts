// The catalog of the store's DynamoDB conditions (issue 25): each written once, named after what
// it guarantees, with the SPEC rule it enforces. Writes compose them; none spells them out again.
// (`#name` placeholders become attribute names in expression.ts; `:values` come with each write.)
import type { MetaItem } from './meta-row.js';

/**
 * The item exists (an update never creates a record by accident). The archive sets a row's TTL
 * only under it (H4, A6): a delete and purge that ran since it read the row stay done (issue 28 item 9).
 */
export const EXISTS = 'attribute_exists(pk)';

/**
 * The session is its chain's live tip: there, not ended, not rotated, not deleted. Appends, pops,
 * begins and commits all require it (F1 409 on an ended session, C4, K3).
 */
export const LIVE = `${EXISTS} AND attribute_not_exists(#endedAt) AND attribute_not_exists(#childSessionId) AND attribute_not_exists(#deletedAt)`;

/** The session exists and is not deleted (ended sessions keep their activity marks). */
export const NOT_DELETED = `${EXISTS} AND attribute_not_exists(#deletedAt)`;

/** Optimistic concurrency on the record (A4, A6, C10): records written before versioning have none. `:v` = the version read. */
export function versionCondition(meta: MetaItem): string {
  return meta.version === 0 ? 'attribute_not_exists(#version)' : '#version = :v';
}

/** No attempt's final commit round holds the seal (or it lapsed): writes wait for that round, so it commits (commit.ts). `:now`. */
export const UNSEALED = '(attribute_not_exists(#seal) OR #seal.#until < :now)';

/** A4 fairness: no other append holds the session's append priority (append-priority.ts), or it lapsed. `:now`, `:priorityId` = ours. */
export const NO_FOREIGN_PRIORITY =
  '(attribute_not_exists(#appendPriority) OR #appendPriority.#until < :now OR #appendPriority.#id = :priorityId)';

/** The fence counter is usable: present and at or above the generation (or a fresh record), L6. */
export const FENCE_COUNTER_OK =
  '((attribute_exists(#fenceCounter) AND #fenceCounter >= #generation) OR attribute_not_exists(#generation) OR ' +
  '(attribute_not_exists(#fenceCounter) AND #generation = :zero))';

/**
 * Finding 2 (issue 22): the recorded attempt may be replaced when its lease ended before ours.
 * Redis leases of one session do not overlap (L1, L2), so a caller granted the lease after the
 * recorded holder's lease ended has a later expiry, while a late begin of an earlier holder (it
 * was paused between its acquire and its begin) has an earlier one and is refused: it cannot take
 * over a live successor. A begin that landed unconfirmed therefore blocks compaction only until
 * the next caller is granted the lease (at once when the refused request released it, at most one
 * lease TTL when that release was lost), not until the recorded attempt's lease runs out.
 * Safety never rests on this clause: the new fence refuses the replaced holder's commit (L6, I1).
 * `:now`, `:exp` = our lease's expiry.
 */
export const TAKEOVER = '(attribute_not_exists(#attempt) OR #leaseExpiresAt < :now OR #leaseExpiresAt < :exp)';

/**
 * E6: the session lets the service's engine compact it: its policy is not `agent`. A begin for the
 * service's engine (not forced) carries it, so the refusal costs no read: the lease is won first,
 * and a loser never gets here (P2). `:agent`.
 */
export const SERVICE_ENGINE_ALLOWED = '(attribute_not_exists(#compactionPolicy) OR #compactionPolicy <> :agent)';

/**
 * X2: a held begin carrying a receipt's count begins only on the history the receipt read (no
 * append or pop since), in the same write that issues the fence. `:expectedCount`.
 */
export const COUNT_AS_READ = '#messageCount = :expectedCount';

/**
 * X2: with the receipt's last sequence number too: a pop then an append by someone else leaves the
 * count as read but not lastSeq (appends never reuse a popped seq). `:expectedLastSeq`.
 */
export const LAST_SEQ_AS_READ = '#lastSeq = :expectedLastSeq';

/** The attempt is still ours under the newest fence (L6): `:aid`, `:fence`. */
export const OUR_ATTEMPT = '#fence = :fence AND #attempt.#attemptId = :aid';

/**
 * C10/C11/L6/A6, every commit round: live, our fence and attempt, no item of the snapshot popped
 * since (the stale mark a pop sets), and the record unchanged since it was read.
 */
export function commitCondition(meta: MetaItem): string {
  return `${LIVE} AND ${OUR_ATTEMPT} AND attribute_not_exists(#attempt.#stale) AND ${versionCondition(meta)}`;
}

/** A3: put an Idempotency-Key record if absent, or over one whose retention passed (TTL deletion lags). `:nowSec`. */
export const IDEMPOTENCY_CONDITION = 'attribute_not_exists(pk) OR #expiresAt < :nowSec';

/** K2: the conversation's record still names the parent as its live tip (the rotation moves it). `:parent`. */
export const TIP_IS_PARENT = '#live = :parent';

/**
 * X1 replace_suffix: the record is as read when the suffix was compared (the version), live and
 * unsealed; when it marks an attempt stale (A6), that attempt is still there (SET on a removed
 * map's member is refused outright). `:now`, `:v`, and `:aid` with `marksAttempt`.
 */
export function replaceSuffixCondition(meta: MetaItem, marksAttempt: boolean): string {
  return `${LIVE} AND ${UNSEALED} AND ${versionCondition(meta)}${marksAttempt ? ' AND #attempt.#attemptId = :aid' : ''}`;
}

/** T1: no turn is current (none, or it expired: expiry is a condition, not a job, T6). `:now`. */
export const NO_LIVE_TURN = '(attribute_not_exists(#activeTurn) OR #activeTurn.#expiresAt < :now)';

/** T2 enqueue: nobody waits for the conversation, so a plain begin jumps no queue. `:zero`. */
export const NO_TURN_WAITERS = '(attribute_not_exists(#turnQueue) OR size(#turnQueue) = :zero)';

/**
 * T3: the write's turn is the current one, its token matches and it has not expired. Checked in
 * the write's own transaction, so a superseded, ended or expired turn never writes.
 * `:turnId`, `:tokenHash`, `:now`.
 */
export const OUR_TURN = '(#activeTurn.#turnId = :turnId AND #activeTurn.#tokenHash = :tokenHash AND #activeTurn.#expiresAt >= :now)';

/** T5: the conversation does not require turns (a write without a token may land). `:required`. */
export const TURNS_NOT_REQUIRED = '(attribute_not_exists(#turnPolicy) OR #turnPolicy <> :required)';

/** T2/T4: the turn state is as read (enqueue grants, rollbacks and rotations copy it). `:turnSeq`. */
export function turnStateCondition(meta: MetaItem): string {
  return meta.turnSeq === undefined ? 'attribute_not_exists(#turnSeq)' : '#turnSeq = :turnSeq';
}

/**
 * H2: the branch's source is as it was when its items were read (the version moves with every
 * append, pop, compaction and delete), so the copy is the session's items 1..n at one moment. `:v`.
 */
export function branchSourceCondition(meta: MetaItem): string {
  return `${NOT_DELETED} AND ${versionCondition(meta)}`;
}

/** H2/K1: no conversation of this id exists for the tenant (put-if-absent on its CONV record). */
export const CONVERSATION_ID_FREE = 'attribute_not_exists(pk)';

/**
 * H2/K1: the id is not the root session of a chain from before conversations (which GET would
 * adopt as that conversation, conversations.ts): no session of that id, or one that is not such a root.
 */
export const NOT_A_LEGACY_ROOT =
  'attribute_not_exists(pk) OR attribute_exists(#conversationId) OR attribute_exists(#parentSessionId) OR attribute_exists(#deletedAt)';

/**
 * H4: a purge deletes a create's Idempotency-Key record only while its stored answer names the
 * deleted session: the same key reused after its retention by another create keeps that one's. `:sid` (quoted).
 */
export const CREATE_KEY_OF_SESSION = 'contains(#bodyJson, :sid)';

/** H4: a purge erases a session's record only once it is a tombstone (a stray task never erases a live session). */
export const ERASE_ONLY_DELETED = 'attribute_exists(#deletedAt)';
