// The fenced commit (SPEC C10, C11, I1, I4, L6, P1, P3): one loop, two strategies.
//
// A round builds the new transcript (compacted items + the concurrent tail read so far) and
// sends ONE transaction: the session record's update, conditioned on "not ended, no child, not
// deleted, fence = ours, attempt = ours, not made stale by a pop, version unchanged since we
// looked", plus the strategy's other writes (rotation: the child's record, the root's tip
// pointer; in place: the archive task) and, whenever they fit, the items themselves. Items that
// do not fit in one transaction are written first under keys nobody reads yet (a child without
// a record, a generation that is not active), listed beforehand in a task that every round from
// then on deletes in its transaction (parts.ts), and removed through that task if the commit fails.
//
// A failed version condition hands back the record's current state, so the next round reads
// only the new tail. Under sustained appends (issue 11: 8 writers at 10/s each) a plain retry
// can lose forever, so from the second round on the attempt raises a seal: a record field,
// expiring in SEAL_MS, that makes appends and pops wait (they poll; it lasts one round trip).
// With the seal up the version holds still, so the sealed round commits. This keeps I4 (every
// append lands: before the seal, in the tail we carry; during it, after it, on the new
// generation or as a 409 that names the new child) and bounds a commit to about three rounds.
import { randomUUID } from 'node:crypto';
import type { Item } from '../../items/types.js';
import type { SessionRef } from '../../session-ref.js';
import {
  FenceStaleError,
  LineageError,
  RotationLostError,
  SessionEndedError,
  SessionNotFoundError,
  StaleSnapshotError,
  StoreRetryableError,
} from '../errors.js';
import { toSessionRecord, withDefaults, type MetaItem, type StoredMeta } from './meta-row.js';
import { encodeItems, packRows, rowItems, type StoredItem } from './rows.js';
import type { AttemptRecord, BegunAttempt, CommitInput, InPlaceCommitted, RotationCommitted } from '../types.js';
import { ATTEMPT_ATTRS, type Attempts } from './attempts.js';
import { tipMoveEntry } from './conversation-row.js';
import { endedTaskItem } from './expiry.js';
import { metaKey, replacedMarkerSk, rotationShardOf, sessionPk } from './keys.js';
import { liveTipOf } from './links.js';
import { PARTS_GRACE_MS, partsTask, partsTaskCheck, runPartsTask } from './parts.js';
import { isConditionFailure, rounds } from './retry.js';
import { conditionFailedAt, itemOf, oldImageOf, TRANSACTION_ENTRIES, withoutUndefined, type Table, type TransactItem } from './table.js';
import { commitCondition, EXISTS, OUR_ATTEMPT, turnStateCondition } from './conditions.js';
import { fencedByTurn, turnRefusal, turnStateOf } from './turn-row.js';

/** Rounds before a commit gives up as retryable; the seal makes the third one final in practice. */
const MAX_COMMIT_ROUNDS = 6;
/** How long a seal holds appends back at most (it is lifted by the commit, milliseconds later). */
export const SEAL_MS = 3_000;
/** At most this much longer, when the sealed round writes ahead: a crashed sealer blocks appends no longer. */
const MAX_SEAL_EXTRA_MS = 10_000;

/** What differs between a rotation and an in-place commit. */
interface Strategy<R> {
  what: string;
  /** pk and generation the new transcript is written under. */
  targetPk: string;
  targetGeneration: number;
  /** Transaction entries besides the items: [0] is always the session record's update. */
  entries(meta: MetaItem, count: number, tokens: number, at: string, rows: number): TransactItem[];
  /** The old image shows this very commit (a response lost after it went through). */
  isOurs(meta: MetaItem): boolean;
  /** A rotation's refusal of an already-rotated parent is RotationLostError; in place it is "ended". */
  rotated(sessionId: string, live: string | null): LineageError;
  result(meta: MetaItem, items: Item[], tail: number, tokens: number, at: string): R;
  /** The committed state, when the old image says we already committed. */
  alreadyCommitted(meta: MetaItem): Promise<R>;
}

export class Commits {
  constructor(
    private readonly table: Table,
    private readonly attempts: Attempts,
  ) {}

  rotate(ref: SessionRef, begun: BegunAttempt, input: CommitInput): Promise<RotationCommitted> {
    const { attempt, session } = begun;
    const parentPk = sessionPk(ref);
    const childRef = { tenantId: ref.tenantId, sessionId: attempt.pendingChildId };
    const childPk = sessionPk(childRef);
    const rootId = session.rootSessionId ?? session.sessionId;
    let withRoot = rootId !== session.sessionId;
    let tipAt = -1;
    const childOf = (meta: MetaItem, count: number, tokens: number, at: string, rows?: number): MetaItem => ({
      ...metaKey(childRef),
      ...childRef,
      conversationId: meta.conversationId,
      format: meta.format ?? 'chat',
      source: meta.source,
      metadataJson: meta.metadataJson ?? (meta.metadata === undefined ? undefined : JSON.stringify(meta.metadata)),
      createdAt: at,
      parentSessionId: ref.sessionId,
      rootSessionId: rootId,
      parentKey: parentPk,
      rotationShard: rotationShardOf(childPk, this.table.rotationShards),
      createdByAttempt: attempt.attemptId,
      generation: 0,
      fenceCounter: 0,
      messageCount: count,
      lastSeq: count,
      tokenEstimate: tokens,
      rows,
      lastActivity: { label: input.activityLabel, at },
      version: 1,
      // T4: the current turn (and the queue, fence and policy) goes on in the child.
      ...turnStateOf(meta),
      // E6: so does whose engine compacts it.
      compactionPolicy: meta.compactionPolicy,
    });
    const strategy: Strategy<RotationCommitted> = {
      what: 'commit rotation',
      targetPk: childPk,
      targetGeneration: 0,
      entries: (meta, count, tokens, at, rows) => {
        const child = childOf(meta, count, tokens, at, rows);
        const entries = [
          this.table.metaUpdate(
            ref,
            {
              update:
                'SET #endedAt = :at, #endReason = :reason, #childSessionId = :child, #tipSessionId = :child, #lastActivity = :mark ' +
                `ADD #version :one REMOVE ${ATTEMPT_ATTRS}`,
              condition: `${commitCondition(meta)} AND ${turnStateCondition(meta)}`,
            },
            {
              ':turnSeq': meta.turnSeq ?? 0,
              ':at': at,
              ':reason': 'compression',
              ':child': childRef.sessionId,
              ':mark': { label: input.activityLabel, at },
              ...commitValues(meta, attempt),
            },
          ),
          this.table.put(child, 'attribute_not_exists(pk)'),
        ];
        // The root learns the newest tip in the same transaction (links.ts resolves tips through it).
        if (withRoot) {
          entries.push(
            this.table.metaUpdate(
              { tenantId: ref.tenantId, sessionId: rootId },
              { update: 'SET #tipSessionId = :child', condition: EXISTS },
              { ':child': childRef.sessionId },
            ),
          );
        }
        // K2: the conversation's live tip moves in this same transaction, from the parent only.
        const tip = tipMoveEntry(this.table, meta, childRef.sessionId, at);
        if (tip) {
          tipAt = entries.length;
          entries.push(tip);
        }
        // H3: the parent's rows get their TTL (endedSessionSeconds) from this task, run by the sweep (expiry.ts).
        entries.push(this.table.put(endedTaskItem(this.table, ref, meta.generation)));
        return entries;
      },
      isOurs: (meta) => meta.childSessionId === attempt.pendingChildId,
      rotated: (id, live) => new RotationLostError(id, live),
      result: (meta, items, tail, tokens, at) => ({
        parent: toSessionRecord({ ...meta, endedAt: at, endReason: 'compression', childSessionId: childRef.sessionId, attempt: undefined }),
        child: toSessionRecord(childOf(meta, items.length, tokens, at)),
        items,
        tailCarried: tail,
      }),
      alreadyCommitted: async (meta) => {
        const child = await this.table.requireMeta(childRef);
        const items = await this.table.readItems(childPk, 0, 1, child.lastSeq);
        return {
          parent: toSessionRecord(meta),
          child: toSessionRecord(child),
          items,
          tailCarried: Math.max(0, items.length - input.compacted.length),
        };
      },
    };
    return this.run(ref, begun, input, strategy, (err) => {
      // A root record that is gone (legacy data) must not block the rotation: drop its update and go again.
      if (withRoot && conditionFailedAt(err, 2) && !conditionFailedAt(err, 0)) {
        withRoot = false;
        return true;
      }
      // The conversation no longer names this parent as live: it was deleted (K3) under the attempt.
      if (tipAt >= 0 && conditionFailedAt(err, tipAt) && !conditionFailedAt(err, 0)) throw new SessionNotFoundError(ref.sessionId);
      return false;
    });
  }

  inPlace(ref: SessionRef, begun: BegunAttempt, input: CommitInput): Promise<InPlaceCommitted> {
    const { attempt, session } = begun;
    const pk = sessionPk(ref);
    const replaced = session.generation;
    // Numbered by fence (above every generation, see attempts.ts), so no two attempts share one.
    const generation = attempt.fence > replaced ? attempt.fence : replaced + 1;
    const archive = this.attempts.archiveTask(ref, replaced);
    const strategy: Strategy<InPlaceCommitted> = {
      what: 'commit in place',
      targetPk: pk,
      targetGeneration: generation,
      entries: (meta, count, tokens, at, rows) => [
        this.table.metaUpdate(
          ref,
          {
            update:
              'SET #generation = :gen, #lastSeq = :count, #messageCount = :count, #tokenEstimate = :tok, #rows = :rows, #lastActivity = :mark ' +
              `ADD #version :one REMOVE ${ATTEMPT_ATTRS}`,
            condition: commitCondition(meta),
          },
          {
            ':gen': generation,
            ':count': count,
            ':rows': rows,
            ':tok': tokens,
            ':mark': { label: input.activityLabel, at },
            ...commitValues(meta, attempt),
          },
        ),
        // P3: the replaced generation is archived later, by us in the background or by the sweep.
        this.table.put(archive.item),
        // H1: history reads the replaced generation (while retained, H3) by this marker.
        this.table.put({ pk, sk: replacedMarkerSk(replaced), generation: replaced, replacedBy: generation, compactedAt: at }),
      ],
      isOurs: (meta) => meta.generation === generation && meta.attempt?.attemptId !== attempt.attemptId && !meta.endedAt,
      rotated: (id, live) => new SessionEndedError(id, live),
      result: (meta, items, tail, tokens, at) => ({
        session: toSessionRecord({
          ...meta,
          generation,
          lastSeq: items.length,
          messageCount: items.length,
          tokenEstimate: tokens,
          lastActivity: { label: input.activityLabel, at },
          version: meta.version + 1,
          attempt: undefined,
        }),
        items,
        tailCarried: tail,
        archive: archive.task,
      }),
      alreadyCommitted: async (meta) => {
        const items = await this.table.readItems(pk, generation, 1, meta.lastSeq);
        return {
          session: toSessionRecord(meta),
          items,
          tailCarried: Math.max(0, items.length - input.compacted.length),
          archive: archive.task,
        };
      },
    };
    return this.run(ref, begun, input, strategy, () => false);
  }

  private async run<R>(
    ref: SessionRef,
    begun: BegunAttempt,
    input: CommitInput,
    s: Strategy<R>,
    retryWithout: (err: unknown) => boolean,
  ): Promise<R> {
    const { attempt } = begun;
    const parentPk = sessionPk(ref);
    let meta: MetaItem = metaFromBegun(begun);
    // A held attempt commits in a later request, conditioned on the record as it reads it then:
    // whatever was appended past the snapshot since is the tail from the first round (I4).
    let tail: StoredItem[] =
      meta.lastSeq > attempt.watermark
        ? (await this.table.queryRange(parentPk, meta.generation, attempt.watermark + 1, meta.lastSeq)).items
        : [];
    /** The write id of the task that lists every row written ahead (absent until a round writes ahead). */
    let ahead: string | undefined;
    /** Keys that task lists: rows of every round written ahead so far. */
    let recorded = new Set<string>();
    /** Rows written ahead and still stored, under keys nobody reads until the flip. */
    let written = new Set<string>();
    /** How long the last round's writes ahead took: a seal must outlast them (see seal()). */
    let aheadMs = 0;
    // The compacted items never change between rounds; only the tail after them does.
    const head = encodeItems(input.compacted, input.tokenEstimates);
    try {
      for (const round of rounds({ max: MAX_COMMIT_ROUNDS })) {
        const at = this.table.isoNow();
        const encoded = [...head, ...tail.map((t) => ({ body: t.body, bytes: Buffer.byteLength(t.body, 'utf8'), tokens: t.tokens }))];
        const rows = rowItems(s.targetPk, s.targetGeneration, 1, packRows(encoded), undefined, head.length);
        const stored = [...rows.heads, ...rows.parts];
        const tokens = encoded.reduce((sum, m) => sum + m.tokens, 0);
        const fixed = s.entries(meta, encoded.length, tokens, at, stored.length);
        fixed[0] = fencedByTurn(fixed[0]!, input.turn, this.table.now());
        if (input.record) fixed.push(this.table.put(input.record));
        const taskEntries = ahead === undefined ? 0 : 1;
        const inline = fixed.length + taskEntries + stored.length <= TRANSACTION_ENTRIES && rows.bytes <= this.table.transactionBytes;
        const keys = new Set(stored.map((r) => r.sk));
        if (!inline) {
          // Too big for one transaction: the rows go first, under keys nobody reads until the flip.
          // A task lists them BEFORE they are written (A7, S2): if the commit never lands, or a
          // write's answer is lost after DynamoDB applied part of it, the task still names them.
          const started = this.table.now();
          ahead ??= randomUUID();
          recorded = new Set([...recorded, ...keys]);
          await this.table.putAll([partsTask(this.table, s.targetPk, ahead, this.table.now() + PARTS_GRACE_MS, [...recorded])]);
          await this.table.putAll(stored);
          aheadMs = this.table.now() - started;
        }
        // I4/A6: rows of earlier rounds this round does not rewrite (a longer or shorter tail
        // moves keys) go before it commits, inline or not: left, they would read as duplicates,
        // or bring back an item popped since.
        const stale = [...written].filter((sk) => !keys.has(sk));
        if (stale.length > 0) await this.table.deleteAll(stale.map((sk) => ({ pk: s.targetPk, sk })));
        written = inline ? new Set([...written].filter((sk) => keys.has(sk))) : keys;
        // Once rows were written ahead, every round takes their task away, and lands only while it exists.
        const task = ahead === undefined ? [] : [partsTaskCheck(this.table, s.targetPk, ahead)];
        try {
          await this.table.transact(s.what, [...fixed, ...task, ...(inline ? stored.map((m) => this.table.put(m)) : [])]);
          return s.result(meta, [...input.compacted, ...tail.map(itemOf)], tail.length, tokens, at);
        } catch (err) {
          if (retryWithout(err)) continue;
          const current = await this.afterFailure(err, ref, s);
          if (s.isOurs(current)) return await s.alreadyCommitted(current);
          // T3: the commit's turn is not current any more: answered, never retried.
          const refusal = input.turn ? turnRefusal(current, input.turn, this.table.now()) : null;
          if (refusal) throw refusal;
          await this.assertCommittable(current, ref, attempt, s);
          // Only the version moved (appends or pops after our snapshot): read the new tail and go
          // again, under a seal from the second round on. Raised again in every later round: a
          // sealed round that lost (its seal lapsed while it wrote ahead) must not go unsealed.
          meta = round >= 1 ? await this.seal(ref, attempt, aheadMs) : current;
          tail = (await this.table.queryRange(parentPk, meta.generation, attempt.watermark + 1, meta.lastSeq)).items;
        }
      }
      throw new StoreRetryableError(`${s.what} on ${ref.sessionId}: the session kept changing`);
    } catch (err) {
      await this.discard(ref, attempt, s, ahead);
      throw err;
    }
  }

  /**
   * What a failed commit means. A condition failure on the record carries its state. Anything
   * else may have gone through (a response lost to a timeout or a dropped connection, after the
   * client's retries): the record says whether it did, and if it did this is our commit.
   */
  private async afterFailure<R>(err: unknown, ref: SessionRef, s: Strategy<R>): Promise<MetaItem> {
    if (conditionFailedAt(err, 0)) {
      const seen = oldImageOf(err, 0);
      if (seen) return seen;
    }
    // A verification read that fails proves nothing: an unconfirmed commit stays outcome unknown.
    const meta = await this.table.getMeta(ref).catch((readErr: unknown) => {
      throw conditionFailedAt(err, 0) ? readErr : err;
    });
    if (meta && s.isOurs(meta)) return meta;
    if (!conditionFailedAt(err, 0)) throw err;
    if (!meta) throw new SessionNotFoundError(ref.sessionId);
    return meta;
  }

  /** Typed refusal unless `attempt` is still the session's live, newest, fresh attempt. */
  private async assertCommittable<R>(meta: MetaItem, ref: SessionRef, attempt: AttemptRecord, s: Strategy<R>): Promise<void> {
    if (meta.deletedAt) throw new SessionNotFoundError(ref.sessionId);
    if (meta.childSessionId) throw s.rotated(ref.sessionId, await liveTipOf(this.table, meta));
    if (meta.endedAt) throw new SessionEndedError(ref.sessionId, await liveTipOf(this.table, meta));
    // Fence moved (L6), or our attempt was abandoned / swept (S1): either way we may not commit.
    if (meta.fence !== attempt.fence || meta.attempt?.attemptId !== attempt.attemptId) {
      throw new FenceStaleError(ref.sessionId, attempt.fence);
    }
    if (meta.attempt.stale) throw new StaleSnapshotError(ref.sessionId);
  }

  /**
   * Puts up the seal (our attempt only) and returns the record as it stands under it. It holds
   * for SEAL_MS past the time the round's writes ahead took last round (capped), so a round
   * that writes megabytes ahead on a slow DynamoDB still commits under its seal.
   */
  private async seal(ref: SessionRef, attempt: AttemptRecord, aheadMs: number): Promise<MetaItem> {
    try {
      const out = await this.table.update(
        'seal for commit',
        ref,
        { update: 'SET #seal = :seal', condition: OUR_ATTEMPT },
        {
          ':seal': { attemptId: attempt.attemptId, until: this.table.now() + SEAL_MS + Math.min(aheadMs, MAX_SEAL_EXTRA_MS) },
          ':aid': attempt.attemptId,
          ':fence': attempt.fence,
        },
        'ALL_NEW',
      );
      return toMetaItem(out.Attributes);
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      throw new FenceStaleError(ref.sessionId, attempt.fence);
    }
  }

  /**
   * After a failed commit. Rows written ahead go first, through their task: its conditional
   * delete also keeps a transaction still in flight (after a transport error) from landing,
   * since every round lands only while the task exists; if the task is gone, our commit landed
   * and nothing is removed. The attempt record (and the seal with it) goes only after those
   * rows: should their removal fail, the task stays for the sweep (S2), and the attempt until its
   * lease ends (S1). Without rows written ahead, the attempt record goes first, so an inline
   * transaction still in flight cannot land.
   */
  private async discard<R>(ref: SessionRef, attempt: AttemptRecord, s: Strategy<R>, ahead: string | undefined): Promise<void> {
    try {
      if (ahead !== undefined) await runPartsTask(this.table, s.targetPk, ahead);
      await this.attempts.clear(ref, attempt, 'compaction failed');
    } catch (err) {
      // The sweep removes what is left (S1/S2); the caller gets the original error.
      this.table.warn('cleanup after a failed commit failed; the sweep will', err, { sessionId: ref.sessionId });
    }
  }
}

function commitValues(meta: MetaItem, attempt: AttemptRecord): Record<string, unknown> {
  return { ':fence': attempt.fence, ':aid': attempt.attemptId, ':v': meta.version, ':one': 1 };
}

/** The record as beginAttempt left it (what the first round conditions on). */
function metaFromBegun(begun: BegunAttempt): MetaItem {
  const s = begun.session;
  return withoutUndefined({
    ...metaKey(s),
    tenantId: s.tenantId,
    sessionId: s.sessionId,
    conversationId: s.conversationId,
    format: s.format,
    source: s.source,
    metadataJson: s.metadata === undefined ? undefined : JSON.stringify(s.metadata),
    createdAt: s.createdAt,
    parentSessionId: s.parentSessionId,
    rootSessionId: s.rootSessionId,
    // E6: the child copies it (the version condition holds it as read).
    compactionPolicy: s.compactionPolicy === 'agent' ? 'agent' : undefined,
    fence: begun.attempt.fence,
    generation: s.generation,
    messageCount: s.messageCount,
    lastSeq: s.lastSeq,
    tokenEstimate: s.tokenEstimate,
    attempt: begun.attempt,
    version: begun.version,
  });
}

function toMetaItem(attributes: Record<string, unknown> | undefined): MetaItem {
  if (!attributes) throw new Error('DynamoDB returned no item');
  return withDefaults(attributes as unknown as StoredMeta);
}
