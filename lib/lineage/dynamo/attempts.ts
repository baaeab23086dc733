// Compaction attempts on the session record: begin (fence + attempt + "started" in one
// update, P1), extend, abandon, what a dead attempt left behind (S2), the sweep's work list
// (S1) and the deferred tasks (archive, purge: P3, A6).
//
// Fences (L6) are issued by beginAttempt itself, from the record's own counter, so every fence
// is above every fence issued before. They are also kept above every generation: in-place
// generations are numbered by fence, so a stale attempt can never take the live generation
// for its own. Records from before fencing (C3) get their counter seeded on first use.
import { randomUUID } from 'node:crypto';
import type { Item } from '../../items/types.js';
import type { SessionRef } from '../../session-ref.js';
import {
  AgentEnginePolicyError,
  AttemptInFlightError,
  StaleSnapshotError,
  StoreOutcomeUnknownError,
  StoreRetryableError,
} from '../errors.js';
import type {
  AttemptRecord,
  BeginAttemptInput,
  BegunAttempt,
  BoundedSnapshot,
  CompactionPolicy,
  ExpiredAttempt,
  SessionRecord,
  SnapshotBound,
  StoreTask,
  SweepPage,
} from '../types.js';
import { isLiveTip, toSessionRecord, withDefaults, type MetaItem, type StoredAttempt, type StoredMeta } from './meta-row.js';
import { runPartsTask } from './parts.js';
import { purgeSession } from './purge.js';
import { expireUnder } from './expiry.js';
import type { StoredItem } from './rows.js';
import { readBounded, type BoundedPart } from './bounded.js';
import {
  allShards,
  ATTEMPTS_INDEX,
  attemptShardOf,
  generationPrefix,
  META_SK,
  MSG_PREFIX,
  parseTaskSk,
  refOfPk,
  sessionPk,
  partsTaskSk,
  taskSk,
} from './keys.js';
import { assertLive } from './links.js';
import { isConditionFailure, mayHaveApplied, rounds } from './retry.js';
import { forEachShard, oldImageOf, type Key, type Table } from './table.js';
import { COUNT_AS_READ, LAST_SEQ_AS_READ, FENCE_COUNTER_OK, LIVE, SERVICE_ENGINE_ALLOWED, TAKEOVER } from './conditions.js';

/** Attempt attributes a commit, abandon or cleanup removes. */
export const ATTEMPT_ATTRS = '#attempt, #attemptShard, #leaseExpiresAt, #attemptWatermark, #seal';
/** How long after an in-place commit the sweep takes over archiving if the committer's background run did not finish. */
const ARCHIVE_GRACE_MS = 120_000;

/** The same rule in TypeScript, for the answer to a refused begin. */
function mayTakeOver(old: MetaItem, leaseExpiresAt: number, now: number): boolean {
  const recorded = old.leaseExpiresAt ?? 0;
  return recorded < now || recorded < leaseExpiresAt;
}

/** A cached record a begin can read beside: versioned (records from before versioning are not) and live. */
function liveVersioned(meta: MetaItem | undefined): MetaItem | undefined {
  return meta && meta.version > 0 && isLiveTip(meta) ? meta : undefined;
}

/** A begin whose own earlier try is on the record: the attempt as that try recorded it. */
function ownBeginOf(meta: MetaItem, attemptId: string): BegunAttempt | undefined {
  if (meta.attempt?.attemptId !== attemptId) return undefined;
  const { stale: _stale, ...attempt } = meta.attempt;
  return { attempt, session: toSessionRecord(meta), version: meta.version };
}

export class Attempts {
  /** Snapshot reads sent beside a begin (P1), each handed to the first snapshot() of its attempt. */
  private readonly readBeside = new WeakMap<BegunAttempt, Promise<Item[]>>();
  /** The same for bounded attempts (P6): the part read beside the begin. */
  private readonly boundedBeside = new WeakMap<BegunAttempt, Promise<BoundedPart>>();
  /** The rows of each bounded attempt's part, for its partial commit (one read per attempt, P1). */
  private readonly parts = new WeakMap<BegunAttempt, StoredItem[]>();

  constructor(private readonly table: Table) {}

  async begin(ref: SessionRef, input: BeginAttemptInput): Promise<BegunAttempt> {
    const pk = sessionPk(ref);
    const stored: StoredAttempt = {
      attemptId: randomUUID(),
      holder: input.holder,
      startedAt: this.table.isoNow(),
      leaseExpiresAt: input.leaseExpiresAt,
      pendingChildId: randomUUID(),
      ...(input.held ? { held: input.held } : {}),
    };
    // P1: a container that knows the record sends the snapshot read beside the begin, for the
    // items that record holds. The begin's old image decides whether the read is the snapshot.
    const known = liveVersioned(this.table.records.get(pk));
    // E6: no read beside a begin this container knows its policy refuses.
    const refused = input.serviceEngine && known?.compactionPolicy === 'agent';
    const bound = input.bound;
    const expected = input.expectedCount;
    const lastSeq = input.expectedLastSeq;
    const early = known && !refused && !bound ? this.table.readItems(pk, known.generation, 1, known.lastSeq) : undefined;
    // P6: a bounded attempt reads only its part, beside the begin as well.
    const earlyPart = known && !refused && bound ? readBounded(this.table, pk, known.generation, known.lastSeq, bound) : undefined;
    // A read the begin proves useless (or a begin that fails) must not surface as an unhandled rejection.
    early?.catch(() => undefined);
    earlyPart?.catch(() => undefined);
    // Two rounds at most: the second only after seeding the fence counter of a record from before it.
    for (const round of rounds({ max: 2 })) {
      const seeded = round > 0;
      try {
        const out = await this.table.update(
          'begin attempt',
          ref,
          {
            update:
              'SET #fenceCounter = if_not_exists(#fenceCounter, :zero) + :one, #fence = if_not_exists(#fenceCounter, :zero) + :one, ' +
              '#attempt = :attempt, #attemptShard = :shard, #leaseExpiresAt = :exp, #attemptWatermark = if_not_exists(#lastSeq, :zero), ' +
              '#lastActivity = :mark ADD #version :one REMOVE #seal',
            // A recorded attempt is replaced only when its lease ended before ours: it expired (a crashed or
            // paused holder), or ours was granted after it (its holder died or was refused after its begin
            // landed, finding 2). See TAKEOVER. The fence keeps the replaced holder from committing (L6).
            // E6: a service-engine begin also needs the session's policy to allow it (no read: the condition).
            // X2: a receipt's count, checked by this write (no read first).
            condition:
              `${LIVE} AND ${TAKEOVER} AND ${FENCE_COUNTER_OK}${input.serviceEngine ? ` AND ${SERVICE_ENGINE_ALLOWED}` : ''}` +
              (expected !== undefined ? ` AND ${COUNT_AS_READ}` : '') +
              (lastSeq !== undefined ? ` AND ${LAST_SEQ_AS_READ}` : ''),
          },
          {
            ':agent': 'agent',
            ':zero': 0,
            ':one': 1,
            ':attempt': stored,
            ':shard': attemptShardOf(pk, this.table.attemptShards),
            ':exp': input.leaseExpiresAt,
            ':mark': { label: input.activityLabel, at: this.table.isoNow() },
            ':now': this.table.now(),
            ...(expected !== undefined ? { ':expectedCount': expected } : {}),
            ...(lastSeq !== undefined ? { ':expectedLastSeq': lastSeq } : {}),
          },
          'ALL_OLD',
        );
        // The old image tells what we replaced; the new state follows from the update.
        if (!out.Attributes) throw new Error('begin attempt: DynamoDB returned no old image');
        const old = withDefaults(out.Attributes as StoredMeta);
        const fence = (old.fenceCounter ?? 0) + 1;
        const attempt: AttemptRecord = { ...stored, fence, watermark: old.lastSeq };
        const after: MetaItem = { ...old, fence, fenceCounter: fence, attempt, attemptWatermark: old.lastSeq, version: old.version + 1 };
        const begun: BegunAttempt = {
          attempt,
          session: toSessionRecord(after),
          version: after.version,
          ...(old.attempt ? { replaced: old.attempt } : {}),
        };
        // The record our update replaced is the one the read was sent for (every write moves the
        // version): nothing changed its items between the cache and the fence, so the read holds
        // exactly items 1..watermark of this generation. What lands after the fence cannot make
        // it wrong: an append is past the watermark (the commit's tail, I4), a pop of an item in
        // it marks the attempt stale (A6), another holder's begin or commit moves the fence (L6).
        // Any other version: the container's record was stale, and snapshot() reads afresh.
        if (early && old.version === known?.version) this.readBeside.set(begun, early);
        if (earlyPart && old.version === known?.version) this.boundedBeside.set(begun, earlyPart);
        return begun;
      } catch (err) {
        if (err instanceof StoreRetryableError && mayHaveApplied(err.cause)) return await this.verifyBegin(ref, stored.attemptId, err);
        if (!isConditionFailure(err)) throw err;
        const old = await assertLive(this.table, ref, oldImageOf(err));
        // An earlier try of this very update landed and its answer was lost (the SDK resent it).
        const ours = ownBeginOf(old, stored.attemptId);
        if (ours) return ours;
        if (input.serviceEngine && old.compactionPolicy === 'agent') throw new AgentEnginePolicyError(ref.sessionId);
        if ((expected !== undefined && old.messageCount !== expected) || (lastSeq !== undefined && old.lastSeq !== lastSeq))
          throw new StaleSnapshotError(ref.sessionId);
        if (old.attempt && !mayTakeOver(old, input.leaseExpiresAt, this.table.now()))
          throw new AttemptInFlightError(ref.sessionId, old.attempt.holder);
        if (seeded) throw err;
        await this.seedFenceCounter(ref);
      }
    }
    throw new StoreRetryableError(`begin attempt on ${ref.sessionId}: the record kept changing`);
  }

  /**
   * Issue 22, item 1: the begin was sent and never answered, so it may have landed. The record
   * says: our attempt is there (go on with it), or it is not (nothing applied yet: should the
   * stalled update land later, the next caller granted the lease takes it over, see TAKEOVER).
   * A read that fails too cannot tell: the outcome stays unknown.
   */
  private async verifyBegin(ref: SessionRef, attemptId: string, err: StoreRetryableError): Promise<BegunAttempt> {
    let meta: MetaItem | undefined;
    try {
      meta = await this.table.getMeta(ref);
    } catch {
      throw new StoreOutcomeUnknownError(
        `begin attempt on ${ref.sessionId}: DynamoDB did not confirm it and the record could not be read`,
        err.cause,
      );
    }
    const ours = meta && ownBeginOf(meta, attemptId);
    if (ours) return ours;
    throw err;
  }

  /**
   * E6: whose engine compacts the session. The version moves, so a rotation that read the record
   * before goes round again and its child takes the new policy (commit.ts copies it).
   */
  async setPolicy(ref: SessionRef, policy: CompactionPolicy): Promise<void> {
    const update = policy === 'agent' ? 'SET #compactionPolicy = :agent ADD #version :one' : 'REMOVE #compactionPolicy ADD #version :one';
    try {
      await this.table.update('set compaction policy', ref, { update, condition: LIVE }, { ':agent': 'agent', ':one': 1 });
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      await assertLive(this.table, ref, oldImageOf(err));
      throw err;
    }
  }

  /** C3: lift a pre-fencing record's counter to its generation, so the next fence is above it. */
  private async seedFenceCounter(ref: SessionRef): Promise<void> {
    await this.table.updateIf(
      'seed fence',
      ref,
      {
        update: 'SET #fenceCounter = #generation',
        condition: 'attribute_exists(#generation) AND (attribute_not_exists(#fenceCounter) OR #fenceCounter < #generation)',
      },
      {},
    );
  }

  async snapshot(ref: SessionRef, begun: BegunAttempt): Promise<Item[]> {
    const early = this.readBeside.get(begun);
    const read = () => this.table.readItems(sessionPk(ref), begun.session.generation, 1, begun.attempt.watermark);
    if (early) {
      this.readBeside.delete(begun);
      // The read beside the begin is an optimisation: one that failed is sent again, as a cold container would.
      return early.catch(read);
    }
    return read();
  }

  /** P6: the attempt's part (all of the snapshot when it fits the bound); its rows are kept for the partial commit. */
  async boundedSnapshot(ref: SessionRef, begun: BegunAttempt, bound: SnapshotBound): Promise<BoundedSnapshot> {
    const read = () => readBounded(this.table, sessionPk(ref), begun.session.generation, begun.attempt.watermark, bound);
    const early = this.boundedBeside.get(begun);
    this.boundedBeside.delete(begun);
    const part = early ? await early.catch(read) : await read();
    this.parts.set(begun, part.items);
    return part.snapshot;
  }

  /** The rows boundedSnapshot read for `begun` (absent for an attempt begun by another request: a held commit reads again). */
  partOf(begun: BegunAttempt): StoredItem[] | undefined {
    return this.parts.get(begun);
  }

  extend(ref: SessionRef, attempt: AttemptRecord, leaseExpiresAt: number): Promise<boolean> {
    return this.table.updateIf(
      'extend attempt',
      ref,
      { update: 'SET #leaseExpiresAt = :exp, #attempt.#leaseExpiresAt = :exp', condition: '#attempt.#attemptId = :aid' },
      { ':exp': leaseExpiresAt, ':aid': attempt.attemptId },
    );
  }

  /** Removes the attempt record if it is still this attempt, with a final activity mark. True when it was. */
  clear(ref: SessionRef, attempt: AttemptRecord, activityLabel?: string): Promise<boolean> {
    return this.table.updateIf(
      'clear attempt',
      ref,
      {
        update: `${activityLabel ? 'SET #lastActivity = :mark ' : ''}REMOVE ${ATTEMPT_ATTRS}`,
        condition: '#attempt.#attemptId = :aid',
      },
      { ':aid': attempt.attemptId, ':mark': { label: activityLabel, at: this.table.isoNow() } },
    );
  }

  /**
   * Deletes what an attempt that can no longer commit wrote: its pending child's items (only while
   * no child META exists) and its unflipped in-place generation. Safe against a commit of the same
   * attempt: callers get here once the attempt record is gone or replaced, and commits require it.
   */
  async removeLeftovers(ref: SessionRef, attempt: AttemptRecord): Promise<number> {
    const meta = await this.table.getMeta(ref);
    if (meta?.attempt?.attemptId === attempt.attemptId) return 0;
    let removed = await this.removePendingChild(ref, attempt.pendingChildId);
    // Fences are unique and above every generation, so a generation numbered by this attempt's
    // fence is its own; unless it is the active one, it is leftover.
    if (meta && attempt.fence !== meta.generation) {
      const keys = await this.table.keysWithPrefix(sessionPk(ref), generationPrefix(attempt.fence));
      await this.table.deleteAll(keys);
      removed += keys.length;
    }
    return removed;
  }

  private async removePendingChild(ref: SessionRef, pendingChildId: string): Promise<number> {
    const childRef = { tenantId: ref.tenantId, sessionId: pendingChildId };
    if (await this.table.getMeta(childRef)) return 0;
    const pk = sessionPk(childRef);
    // The task listing rows written ahead goes too: a child without a record is garbage, and a
    // commit that still tried would need that task (its transaction deletes it conditionally).
    const [rows, tasks] = await Promise.all([this.table.keysWithPrefix(pk, MSG_PREFIX), this.table.keysWithPrefix(pk, partsTaskSk(''))]);
    await this.table.deleteAll([...rows, ...tasks]);
    return rows.length;
  }

  async cleanExpired(expired: ExpiredAttempt): Promise<{ cleaned: boolean; orphanMessagesRemoved: number }> {
    const cleaned = await this.clear(expired.ref, expired.attempt, 'compaction failed');
    // Even when the attempt was replaced, its leftovers are garbage: it can no longer commit.
    const orphanMessagesRemoved = await this.removeLeftovers(expired.ref, expired.attempt);
    return { cleaned, orphanMessagesRemoved };
  }

  /** The archive task an in-place commit writes in its own transaction (P3). */
  archiveTask(ref: SessionRef, generation: number): { item: Record<string, unknown>; task: StoreTask } {
    const pk = sessionPk(ref);
    const dueAt = this.table.now() + ARCHIVE_GRACE_MS;
    return {
      item: {
        pk,
        sk: taskSk('archive', generation),
        kind: 'archive',
        generation,
        attemptShard: attemptShardOf(pk, this.table.attemptShards),
        leaseExpiresAt: dueAt,
      },
      task: { ref, kind: 'archive', generation, dueAt },
    };
  }

  /**
   * Archive: the replaced generation's items get the retention TTL (C11). Purge: a deleted
   * session's items, idempotency records and a pending child's items are removed (A6). Both are
   * paced under the partition's write budget (write-budget.ts) and go a page at a time. The task
   * item goes last, so a run that dies is simply run again (an archive skips the rows it already
   * did). Returns the items touched.
   */
  async runTask(task: StoreTask, retentionSeconds: number): Promise<number> {
    const pk = sessionPk(task.ref);
    // Chunks written ahead of a commit: their own task item goes first (parts.ts).
    if (task.kind === 'parts') return task.scope ? runPartsTask(this.table, pk, task.scope) : 0;
    let touched = 0;
    if (task.kind === 'archive') {
      const meta = await this.table.getMeta(task.ref);
      // Never put a TTL on the live generation (a task for it can only be a bug or a stale replay).
      if (meta && meta.generation !== task.generation) touched = await this.archive(pk, task.generation, retentionSeconds);
    } else {
      // H4: everything of the session (purge.ts).
      touched = await purgeSession(this.table, task.ref, (ref, child) => this.removePendingChild(ref, child));
    }
    await this.table.deleteAll([{ pk, sk: taskSk(task.kind, task.generation) }]);
    return touched;
  }

  /**
   * Sets the TTL on every row of a replaced generation (and the chunks its rows name), each by an
   * update that requires the row to exist: a delete and purge landing between this read and the
   * write must not get the bodies back (H4, A6; issue 28 item 9). Returns the items archived.
   */
  private archive(pk: string, generation: number, retentionSeconds: number): Promise<number> {
    return expireUnder(this.table, pk, generationPrefix(generation), Math.floor(this.table.now() / 1000) + retentionSeconds);
  }

  /**
   * Held attempts in flight (E1-E5), for operators (`lease show`): every shard of attemptsByExpiry
   * (sparse: only records with an attempt, and task rows), confirmed on the records themselves.
   */
  async listHeld(tenantId?: string): Promise<SessionRecord[]> {
    const perShard = await forEachShard(allShards('A', this.table.attemptShards), (shard) =>
      this.table.queryIndex<Key>({
        IndexName: ATTEMPTS_INDEX,
        KeyConditionExpression: '#s = :s',
        ExpressionAttributeNames: { '#s': 'attemptShard' },
        ExpressionAttributeValues: { ':s': shard },
      }),
    );
    const prefix = tenantId === undefined ? 'T#' : `${sessionPk({ tenantId, sessionId: '' })}`;
    const keys = perShard.flat().filter((k) => k.sk === META_SK && k.pk.startsWith(prefix));
    const metas = await this.table.batchGetMetas(keys);
    return metas.filter((m) => m.attempt?.held && !m.deletedAt).map(toSessionRecord);
  }

  /**
   * Expired attempts and due tasks from every shard of attemptsByExpiry, queried in parallel
   * (bounded), the page filled round-robin so a shard whose entries keep being skipped (a lease
   * still held) never starves the others (S1).
   */
  async listSweepWork(now: number, limit: number): Promise<SweepPage> {
    const perShard = await forEachShard(allShards('A', this.table.attemptShards), (shard) =>
      this.table.queryIndex<Key>(
        {
          IndexName: ATTEMPTS_INDEX,
          KeyConditionExpression: '#s = :s AND #e < :now',
          ExpressionAttributeNames: { '#s': 'attemptShard', '#e': 'leaseExpiresAt' },
          ExpressionAttributeValues: { ':s': shard, ':now': now },
        },
        limit,
      ),
    );
    const keys: Key[] = [];
    for (let i = 0; keys.length < limit && perShard.some((items) => i < items.length); i++) {
      for (const items of perShard) if (i < items.length && keys.length < limit) keys.push(items[i]!);
    }
    const tasks: StoreTask[] = [];
    const metaKeys: Key[] = [];
    for (const key of keys) {
      if (key.sk === META_SK) metaKeys.push(key);
      const t = parseTaskSk(key.sk);
      if (t) tasks.push({ ref: refOfPk(key.pk), ...t, dueAt: now });
    }
    // The index is eventually consistent: confirm each attempt on the record itself.
    const attempts: ExpiredAttempt[] = [];
    for (const meta of await this.table.batchGetMetas(metaKeys)) {
      if (meta.attempt && (meta.leaseExpiresAt ?? meta.attempt.leaseExpiresAt) < now) {
        attempts.push({ ref: { tenantId: meta.tenantId, sessionId: meta.sessionId }, attempt: meta.attempt });
      }
    }
    return { attempts, tasks };
  }
}
