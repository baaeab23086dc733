// Sessions and their items: create, append (A3 idempotent, A4 conditional), page and tail
// reads (A5), pop and delete (A6). Appends never look at the lease (I4); they condition on the
// session's version, so two appends can never take the same sequence numbers.
import { randomUUID } from 'node:crypto';
import type { SessionRef } from '../../session-ref.js';
import {
  CountMismatchError,
  ItemTooLargeError,
  SessionEndedError,
  SessionExistsError,
  SessionNotFoundError,
  StoreOutcomeUnknownError,
  StoreRetryableError,
} from '../errors.js';
import { DEFAULT_IDEMPOTENCY_TTL_SECONDS, MAX_APPEND_BYTES } from '../limits.js';
import type {
  ConversationScope,
  AppendInput,
  AppendResult,
  CreateResult,
  CreateSessionInput,
  PopResult,
  PreparedItems,
  SessionRecord,
  StoredResponse,
  TurnCredential,
} from '../types.js';
import { idempotencyRecord, liveRecord, replay, type IdempotencyRecord } from './idempotency.js';
import { isLiveTip, toSessionRecord, type MetaItem } from './meta-row.js';
import { appendIdempotencyKey, attemptShardOf, createIdempotencyKey, metaKey, sessionPk, taskSk } from './keys.js';
import { dropParts, partsTaskCheck, writeParts } from './parts.js';
import { rowsGone, shrinkRow } from './row-removal.js';
import { encodeItems, packRows, rowItems, type Encoded } from './rows.js';
import { claimPriority, foreignPriorityWait, holdsPriority, PRIORITY_AFTER_LOSSES } from './append-priority.js';
import { assertLive } from './links.js';
import {
  conversationIdempotencyKey,
  conversationItemFor,
  conversationKey,
  ConversationTakenError,
  type ConversationItem,
} from './conversation-row.js';
import { backoffDelay, rounds, sleep } from './retry.js';
import {
  conditionFailedAt,
  itemOf,
  oldImageOf,
  oldItemOf,
  TRANSACTION_ENTRIES,
  withoutUndefined,
  type Key,
  type Table,
  type TransactItem,
} from './table.js';
import { EXISTS, IDEMPOTENCY_CONDITION, LIVE, NO_FOREIGN_PRIORITY, NOT_DELETED, UNSEALED, versionCondition } from './conditions.js';
import { turnClause, turnValues, writeRefusal } from './turn-row.js';

/** Version races a pop retries before giving up as retryable (each retry is one round trip). */
const MAX_WRITE_ROUNDS = 40;
/**
 * How long an append keeps going before it answers retryable. Not a count of lost races: with
 * the append priority those end after a few rounds; this bounds only a session that cannot be
 * written at all (DynamoDB refusing or stalling) within one request's time.
 */
const APPEND_DEADLINE_MS = 15_000;

/** Whether an append's rows, the record update and the key's record fit one transaction. */
function fitsOneTransaction(table: Table, rows: { heads: unknown[]; parts: unknown[]; bytes: number }, withKey: boolean): boolean {
  return (
    2 + rows.heads.length + rows.parts.length <= TRANSACTION_ENTRIES && rows.bytes + (withKey ? 20_000 : 2_000) <= table.transactionBytes
  );
}

/** An append that meets an attempt's seal polls this often until it lifts (it lasts milliseconds). */
const SEAL_POLL_MS = 15;

export class Sessions {
  constructor(
    private readonly table: Table,
    private readonly idempotencyTtlSeconds = DEFAULT_IDEMPOTENCY_TTL_SECONDS,
  ) {}

  async create(input: CreateSessionInput): Promise<CreateResult> {
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId ?? randomUUID() };
    const conversationId = input.conversationId ?? ref.sessionId;
    const item: MetaItem = {
      ...metaKey(ref),
      ...ref,
      conversationId,
      format: input.format ?? 'chat',
      source: input.source,
      metadataJson: input.metadata === undefined ? undefined : JSON.stringify(input.metadata),
      createdAt: this.table.isoNow(),
      generation: 0,
      fenceCounter: 0,
      messageCount: 0,
      lastSeq: 0,
      tokenEstimate: 0,
      version: 1,
    };
    const idem = input.idempotency;
    // H4: the record names its create's key, so a delete's purge removes that key's stored answer too.
    if (idem) item.createKeyPk = createIdempotencyKey(input.tenantId, idem.key).pk;
    const session = toSessionRecord(item);
    const entries: TransactItem[] = [this.table.put(item, 'attribute_not_exists(pk)')];
    if (idem) {
      const key = createIdempotencyKey(input.tenantId, idem.key);
      const seen = liveRecord(await this.table.getItem<IdempotencyRecord>(key), this.table.now());
      if (seen) return { replayed: true, response: replay(seen, idem) };
      const response = input.respond?.(session) ?? { status: 201, body: session };
      const record = idempotencyRecord(key, idem, response, this.table.now(), this.idempotencyTtlSeconds);
      entries.push(this.table.put(record, IDEMPOTENCY_CONDITION, { ':nowSec': Math.floor(this.table.now() / 1000) }));
    }
    // K1: every chain is a conversation, created with its root in the same transaction.
    entries.push(this.table.put(conversationItemFor(item, conversationId), 'attribute_not_exists(pk)'));
    try {
      await this.table.transact('create session', entries);
    } catch (err) {
      if (idem && conditionFailedAt(err, 1)) {
        // An identical request raced us and won: answer what it answered.
        return { replayed: true, response: replay(oldItemOf<IdempotencyRecord>(err, 1)!, idem) };
      }
      if (conditionFailedAt(err, 0)) throw new SessionExistsError(ref.sessionId);
      if (conditionFailedAt(err, entries.length - 1)) {
        throw input.conversationId === undefined ? new SessionExistsError(ref.sessionId) : new ConversationTakenError(conversationId);
      }
      throw err;
    }
    // P5: the container that created a session knows its record: the first append is one call.
    this.table.records.set(withoutUndefined(item));
    return { replayed: false, session };
  }

  async get(ref: SessionRef): Promise<SessionRecord | null> {
    const meta = await this.table.getMeta(ref);
    return meta && !meta.deletedAt ? toSessionRecord(meta) : null;
  }

  async append(ref: SessionRef, input: AppendInput): Promise<AppendResult> {
    const pk = sessionPk(ref);
    const idem = input.idempotency;
    const idemKey =
      idem &&
      (idem.conversation ? conversationIdempotencyKey(ref.tenantId, idem.conversation, idem.key) : appendIdempotencyKey(ref, idem.key));
    // P5: a container that has seen the record sends the transaction at once, conditioned on it;
    // the key's own put-if-absent condition answers a replay. A cold one reads both first.
    // Only a live record is worth conditioning on: an ended one may have been deleted since (404,
    // not 409), and nothing lands on it anyway; such a session is read afresh.
    const seenRecord = this.table.records.get(pk);
    const cached = seenRecord && isLiveTip(seenRecord) ? seenRecord : undefined;
    const [first, seen] = cached
      ? [cached, undefined]
      : await Promise.all([this.table.getMeta(ref), idemKey ? this.table.getItem<IdempotencyRecord>(idemKey) : Promise.resolve(undefined)]);
    const remembered = liveRecord(seen, this.table.now());
    if (remembered && idem) return this.replayOf(ref, input, remembered, first);

    const ahead: { w?: string } = {};
    try {
      const result = await this.appendRounds(ref, input, idemKey, first, ahead, cached);
      if (result.replayed && ahead.w) await dropParts(this.table, pk, ahead.w);
      return result;
    } catch (err) {
      // Chunks written ahead of a commit that did not land are removed now (the sweep's task
      // otherwise); after an unconfirmed commit they may be referenced, and the task says which.
      if (ahead.w && !(err instanceof StoreOutcomeUnknownError)) await dropParts(this.table, pk, ahead.w);
      throw err;
    }
  }

  private async appendRounds(
    ref: SessionRef,
    input: AppendInput,
    /** The key's record (session- or conversation-scoped), decided once by append(). */
    idemKey: Key | undefined,
    first: MetaItem | undefined,
    ahead: { w?: string },
    cached: MetaItem | undefined,
  ): Promise<AppendResult> {
    const pk = sessionPk(ref);
    const idem = input.idempotency;
    let meta = first;
    let prepared: PreparedItems | undefined;
    let groups: Encoded[][] | undefined;
    const deadline = this.table.now() + APPEND_DEADLINE_MS;
    let lost = 0;
    let priorityId: string | undefined;
    // Waits scale with how long a write takes now, so a crowd of appends does not flood the record.
    const pace = { writeMs: 10 };
    for (const round of rounds({ until: deadline, now: this.table.now })) {
      try {
        const now = this.table.now();
        if (
          lost >= PRIORITY_AFTER_LOSSES &&
          meta &&
          !holdsPriority(meta, priorityId, now) &&
          foreignPriorityWait(meta, priorityId, now) === 0
        ) {
          meta = await claimPriority(this.table, ref, (priorityId ??= randomUUID()));
        }
        meta = await this.writableMeta(ref, meta, { priorityId, pace });
      } catch (err) {
        // A retry that raced its own first try: that try may have landed just before the session
        // ended (our key read came first). Once ended, nothing more can land, so a second read of
        // the key is final; answering 409 instead would send the client to append again on the child.
        if (!(err instanceof SessionEndedError) || !idem || !idemKey) throw err;
        const landed = liveRecord(await this.table.getItem<IdempotencyRecord>(idemKey), this.table.now());
        if (landed) return this.replayOf(ref, input, landed, 'ended');
        throw err;
      }
      prepared ??= input.prepare(toSessionRecord(meta));
      const n = prepared.items.length;
      if (n === 0) throw new RangeError('an append holds at least one item');
      const tokens = prepared.tokenEstimates.reduce((a, b) => a + b, 0);
      if (input.expectedCount !== undefined && meta.messageCount !== input.expectedCount) {
        // A4 is answered from DynamoDB's record, never from what the container remembered.
        // A3 before A4: a keyed retry of an append that landed sees a moved count, so the key is
        // read beside the record (the cold path read it before anything else).
        if (meta === cached) {
          const [fresh, seen] = await Promise.all([
            this.table.getMeta(ref),
            idemKey ? this.table.getItem<IdempotencyRecord>(idemKey) : Promise.resolve(undefined),
          ]);
          const landed = liveRecord(seen, this.table.now());
          if (landed && idem) return this.replayOf(ref, input, landed, fresh);
          meta = fresh;
          continue;
        }
        throw new CountMismatchError(ref.sessionId, input.expectedCount, meta.messageCount);
      }
      // Encoded, measured and packed once: a lost race moves only the rows' keys, never their content.
      groups ??= packRows(encodeItems(prepared.items, prepared.tokenEstimates));
      let rows = rowItems(pk, meta.generation, meta.lastSeq + 1, groups);
      if (!fitsOneTransaction(this.table, rows, idem !== undefined)) {
        // A7 beyond one transaction: the chunks go first under a write id nobody reads, then one
        // conditional transaction makes them visible (rows.ts, README "Storage layout").
        ahead.w ??= await writeParts(this.table, pk, groups);
        rows = rowItems(pk, meta.generation, meta.lastSeq + 1, groups, ahead.w);
        if (rows.heads.length + 3 > TRANSACTION_ENTRIES) throw new ItemTooLargeError(-1, rows.bytes, MAX_APPEND_BYTES);
      }
      const after: MetaItem = {
        ...meta,
        lastSeq: meta.lastSeq + n,
        messageCount: meta.messageCount + n,
        tokenEstimate: meta.tokenEstimate + tokens,
        version: meta.version + 1,
      };
      const session = toSessionRecord(after);
      const response: StoredResponse | undefined = input.respond?.(session, n);
      const mine = holdsPriority(meta, priorityId, this.table.now());
      const entries: TransactItem[] = [
        this.table.metaUpdate(
          ref,
          {
            update: `SET #lastSeq = :last ADD #messageCount :n, #tokenEstimate :tok, #rows :rows, #version :one${input.turn ? ', #turnAppended :n' : ''}${mine ? ' REMOVE #appendPriority' : ''}`,
            condition: `${LIVE} AND ${UNSEALED} AND ${NO_FOREIGN_PRIORITY} AND ${versionCondition(meta)} AND ${turnClause(input.turn)}`,
          },
          {
            ...turnValues(input.turn),
            ':last': after.lastSeq,
            ':n': n,
            ':rows': rows.heads.length + (ahead.w ? 0 : rows.parts.length),
            ':tok': tokens,
            ':one': 1,
            ':now': this.table.now(),
            ':v': meta.version,
            ':priorityId': priorityId ?? '-',
          },
        ),
        ...rows.heads.map((m) => this.table.put(m)),
        ...(ahead.w ? [partsTaskCheck(this.table, pk, ahead.w)] : rows.parts.map((m) => this.table.put(m))),
      ];
      if (idem && idemKey) {
        const record = idempotencyRecord(
          idemKey,
          idem,
          response ?? { status: 200, body: null },
          this.table.now(),
          this.idempotencyTtlSeconds,
        );
        entries.push(this.table.put(record, IDEMPOTENCY_CONDITION, { ':nowSec': Math.floor(this.table.now() / 1000) }));
      }
      const sent = this.table.now();
      try {
        await this.table.transact('append items', entries);
        this.table.records.set(mine ? { ...after, appendPriority: undefined } : after);
        return { replayed: false, session, appended: n, ...(response ? { response } : {}) };
      } catch (err) {
        const idemAt = entries.length - 1;
        if (idem && conditionFailedAt(err, idemAt)) {
          // The same key landed first (an identical request racing this one, or its earlier try).
          // The record passed its own condition, unless it failed too: then its old image says what it is now.
          const now = conditionFailedAt(err, 0) ? (oldImageOf(err, 0) ?? null) : meta;
          return this.replayOf(ref, input, oldItemOf<IdempotencyRecord>(err, idemAt)!, now);
        }
        if (!conditionFailedAt(err, 0)) throw err;
        // Another append, a pop, a begin or a commit moved the session: go again from what it saw.
        meta = oldImageOf(err, 0);
        // T3/T5: refused for its turn (or for having none), the append is answered, not retried.
        const refusal = meta && isLiveTip(meta) ? writeRefusal(meta, input.turn, this.table.now()) : null;
        if (refusal) throw refusal;
        if (meta) this.table.records.set(meta);
        else this.table.records.drop(pk);
        lost++;
        pace.writeMs = Math.max(1, this.table.now() - sent);
        // Holding the priority, go again at once: no other append can land until we do.
        if (!(meta && holdsPriority(meta, priorityId, this.table.now()))) {
          await sleep(backoffDelay(Math.min(round, 4), { baseDelayMs: pace.writeMs, maxDelayMs: 20 * pace.writeMs }));
        }
      }
    }
    throw new StoreRetryableError(`append to ${ref.sessionId}: the session could not be written for ${APPEND_DEADLINE_MS / 1000} s`);
  }

  /**
   * A3 with K3: a key's first response, only while the session it was made on exists (a key of a
   * deleted session is no answer: 404 like every other route) and, for a conversation's key, only
   * for the incarnation that exists now: a conversation deleted and created again has another root,
   * so a tip this container remembers from before must not answer from the old one's keys. The
   * conversation's record is read here, on the replay path only (P5: a first append adds no call).
   * `session`: the record as last confirmed, null when DynamoDB said it is gone, 'ended' when it is
   * known to exist and be ended.
   */
  private async replayOf(
    ref: SessionRef,
    input: AppendInput,
    record: IdempotencyRecord,
    session: MetaItem | null | undefined | 'ended',
  ): Promise<AppendResult> {
    const idem = input.idempotency!;
    if (!session || (session !== 'ended' && session.deletedAt)) throw new SessionNotFoundError(ref.sessionId);
    const scope = idem.conversation;
    if (scope) {
      const conv = await this.table.getItem<ConversationItem>(conversationKey(ref.tenantId, scope.conversationId));
      // Not found for this tip: a conversation route reads the record again and goes on its live session.
      if (conv?.rootSessionId !== scope.rootSessionId) throw new SessionNotFoundError(ref.sessionId);
    }
    return { replayed: true, response: replay(record, idem) };
  }

  /**
   * The session an append or pop may write to: it exists, is not deleted or ended (an ended one
   * names its live tip), and no attempt's seal is up, nor for an append another append's priority
   * (wait it out: each lasts one write). Pops ignore append priority: they are rare and cannot starve one.
   */
  private async writableMeta(
    ref: SessionRef,
    known: MetaItem | undefined,
    append?: { priorityId: string | undefined; pace: { writeMs: number } },
  ): Promise<MetaItem> {
    let read = known;
    for (;;) {
      const meta = await assertLive(this.table, ref, read);
      const now = this.table.now();
      const sealWait = (meta.seal?.until ?? 0) - now;
      const priorityWait = append ? foreignPriorityWait(meta, append.priorityId, now) : 0;
      if (sealWait <= 0 && priorityWait <= 0) return meta;
      // A priority mark lasts about one write of its holder: look again after about that long (jittered).
      const poll = sealWait > 0 ? SEAL_POLL_MS : append!.pace.writeMs * (1 + Math.random());
      await sleep(Math.min(poll, Math.max(sealWait, priorityWait)));
      read = await this.table.getMeta(ref);
    }
  }

  async popLast(ref: SessionRef, turn?: TurnCredential): Promise<PopResult> {
    const pk = sessionPk(ref);
    let meta = await this.table.getMeta(ref);
    for (const round of rounds({ max: MAX_WRITE_ROUNDS })) {
      meta = await this.writableMeta(ref, meta);
      const [last] = (await this.table.queryRange(pk, meta.generation, 1, meta.lastSeq, { limit: 1, newestFirst: true })).items;
      if (!last) {
        // T3/T5: nothing to remove, but the turn is checked as for any write (on this consistent
        // read), so a superseded turn is told so instead of believing it is still current.
        const refusal = writeRefusal(meta, turn, this.table.now());
        if (refusal) throw refusal;
        return { session: toSessionRecord(meta), removed: null };
      }
      // A6: an in-flight attempt that already read this item must not commit it back.
      const stale = meta.attempt !== undefined && last.seq <= (meta.attempt.watermark ?? 0);
      const tokens = last.tokens;
      // A row that goes takes its inline parts along (records older than packing count no rows).
      const gone = rowsGone(meta.rows !== undefined, last.row);
      const after: MetaItem = {
        ...meta,
        messageCount: meta.messageCount - 1,
        tokenEstimate: meta.tokenEstimate - tokens,
        version: meta.version + 1,
      };
      try {
        await this.table.transact('pop item', [
          this.table.metaUpdate(
            ref,
            {
              update: `ADD #messageCount :minus, #tokenEstimate :tok, #version :one${gone ? ', #rows :rowsGone' : ''}${stale ? ' SET #attempt.#stale = :true' : ''}`,
              // Marking needs the attempt still there: ending one (Attempts.clear) does not move the
              // version, and SET on a removed map's member is refused outright (a 500, not a retry).
              condition: `${LIVE} AND ${UNSEALED} AND ${versionCondition(meta)} AND ${turnClause(turn)}${stale ? ' AND #attempt.#attemptId = :aid' : ''}`,
            },
            {
              ...turnValues(turn),
              ':minus': -1,
              ':rowsGone': -gone,
              ':tok': -tokens,
              ':one': 1,
              ':true': true,
              ':now': this.table.now(),
              ':v': meta.version,
              ...(stale ? { ':aid': meta.attempt!.attemptId } : {}),
            },
          ),
          ...shrinkRow(this.table, last.row),
        ]);
        if (after.attempt && stale) after.attempt = { ...after.attempt, stale: true };
        return { session: toSessionRecord(after), removed: itemOf(last) };
      } catch (err) {
        if (conditionFailedAt(err, 0)) {
          meta = oldImageOf(err, 0);
          const refusal = meta && isLiveTip(meta) ? writeRefusal(meta, turn, this.table.now()) : null;
          if (refusal) throw refusal;
        } else if (conditionFailedAt(err, 1)) meta = await this.table.getMeta(ref);
        else throw err;
        await sleep(backoffDelay(Math.min(round, 3), { baseDelayMs: 5, maxDelayMs: 100 }));
      }
    }
    throw new StoreRetryableError(`pop on ${ref.sessionId}: the session kept changing`);
  }

  /** A6: tombstone the record (links stay for relatives) and leave the items to a purge task. */
  async delete(ref: SessionRef, known?: MetaItem): Promise<void> {
    const meta = known ?? (await this.table.requireMeta(ref));
    try {
      await this.table.transact('delete session', tombstoneEntries(this.table, meta));
    } catch (err) {
      if (conditionFailedAt(err, 0)) throw new SessionNotFoundError(ref.sessionId);
      throw err;
    }
  }

  async touch(ref: SessionRef, label: string): Promise<void> {
    // Deliberately no version bump: heartbeats must not make a commit's version check fail.
    await this.table.updateIf(
      'touch activity',
      ref,
      { update: 'SET #lastActivity = :mark', condition: EXISTS },
      { ':mark': { label, at: this.table.isoNow() } },
    );
  }
}

/**
 * A6/K3: a session's tombstone (its record stays so relatives' links resolve) and the task that
 * purges its items: two transaction entries, the first conditioned on "not deleted yet". `erase`
 * (H4: the whole conversation goes, so no relative is left to need the record): the purge removes
 * the record too, and the conversation incarnation's Idempotency-Key records.
 */
export function tombstoneEntries(table: Table, meta: MetaItem, erase?: ConversationScope): TransactItem[] {
  const ref = { tenantId: meta.tenantId, sessionId: meta.sessionId };
  return [
    table.metaUpdate(
      ref,
      {
        update:
          'SET #deletedAt = :at ADD #version :one ' +
          'REMOVE #metadataJson, #metadata, #attempt, #attemptShard, #leaseExpiresAt, #attemptWatermark, #seal, #appendPriority',
        condition: NOT_DELETED,
      },
      { ':at': table.isoNow(), ':one': 1 },
    ),
    table.put(purgeTaskItem(table, meta, erase)),
  ];
}

/** The purge task of a deleted session (attempts.ts runs it): due at once, found by the sweep if the background run is lost. */
export function purgeTaskItem(table: Table, meta: MetaItem, erase?: ConversationScope): Record<string, unknown> {
  const pk = sessionPk(meta);
  return {
    pk,
    sk: taskSk('purge', 0),
    kind: 'purge',
    generation: 0,
    attemptShard: attemptShardOf(pk, table.attemptShards),
    leaseExpiresAt: table.now(),
    ...(meta.attempt ? { pendingChildId: meta.attempt.pendingChildId } : {}),
    ...(erase ? { erase: { conversationId: erase.conversationId, rootSessionId: erase.rootSessionId } } : {}),
  };
}
