// History transactions (SPEC X1): replace_suffix, and the empty append that only records its
// operation id. One transaction removes the live session's last items (when they equal the
// expected suffix, compared as canonical JSON), appends the replacement and records the operation
// id; a repeated id answers its first response (A3's records and rules). Non-empty append_items
// transactions are plain keyed appends (sessions.ts).
import { canonicalJson } from '../../items/canonical-json.js';
import type { Item } from '../../items/types.js';
import type { SessionRef } from '../../session-ref.js';
import { StoreOutcomeUnknownError, StoreRetryableError, SuffixMismatchError, SuffixTooLongError } from '../errors.js';
import { DEFAULT_IDEMPOTENCY_TTL_SECONDS } from '../limits.js';
import type { PreparedItems, ReplaceSuffixInput, ReplaceSuffixResult } from '../types.js';
import { IDEMPOTENCY_CONDITION, replaceSuffixCondition } from './conditions.js';
import { conversationIdempotencyKey } from './conversation-row.js';
import { idempotencyRecord, liveRecord, replay, type IdempotencyRecord } from './idempotency.js';
import { appendIdempotencyKey, sessionPk } from './keys.js';
import { assertLive } from './links.js';
import { isLiveTip, rowLimit, toSessionRecord, type MetaItem } from './meta-row.js';
import { dropParts, partsTaskCheck, writeParts } from './parts.js';
import { backoffDelay, rounds, sleep } from './retry.js';
import { rowsGone, shrinkRow } from './row-removal.js';
import { encodeItems, packRows, rowItems, type Encoded, type StoredItem } from './rows.js';
import { REWROTE_BEFORE_TURN, turnClause, turnValues, writeRefusal } from './turn-row.js';
import { conditionFailedAt, oldImageOf, oldItemOf, TRANSACTION_ENTRIES, type Key, type Table, type TransactItem } from './table.js';

/** Lost version races before answering retryable (each costs a tail read and a write). */
const MAX_ROUNDS = 20;
/** An attempt's seal lasts milliseconds (commit.ts): look again this often. */
const SEAL_POLL_MS = 15;

export class Transactions {
  constructor(
    private readonly table: Table,
    private readonly idempotencyTtlSeconds = DEFAULT_IDEMPOTENCY_TTL_SECONDS,
  ) {}

  async replaceSuffix(ref: SessionRef, input: ReplaceSuffixInput): Promise<ReplaceSuffixResult> {
    const pk = sessionPk(ref);
    const idem = input.idempotency;
    const idemKey = idem.conversation
      ? conversationIdempotencyKey(ref.tenantId, idem.conversation, idem.key)
      : appendIdempotencyKey(ref, idem.key);
    // P5 as for appends: a container that saw the live record compares and writes at once; the
    // key's put-if-absent answers a replay. A cold one reads the record and the key first.
    const seen = this.table.records.get(pk);
    const cached = seen && isLiveTip(seen) ? seen : undefined;
    let meta: MetaItem | undefined = cached;
    if (!cached) {
      const [fresh, record] = await Promise.all([this.table.getMeta(ref), this.table.getItem<IdempotencyRecord>(idemKey)]);
      const landed = liveRecord(record, this.table.now());
      if (landed) return { replayed: true, response: replay(landed, idem) };
      meta = fresh;
    }
    const ahead: { w?: string } = {};
    try {
      const result = await this.rounds(ref, input, idemKey, meta, ahead);
      if (result.replayed && ahead.w) await dropParts(this.table, pk, ahead.w);
      return result;
    } catch (err) {
      if (ahead.w && !(err instanceof StoreOutcomeUnknownError)) await dropParts(this.table, pk, ahead.w);
      throw err;
    }
  }

  private async rounds(
    ref: SessionRef,
    input: ReplaceSuffixInput,
    idemKey: Key,
    first: MetaItem | undefined,
    ahead: { w?: string },
  ): Promise<ReplaceSuffixResult> {
    const pk = sessionPk(ref);
    const idem = input.idempotency;
    let meta = first;
    let prepared: { expectedSuffix: readonly Item[]; replacement: PreparedItems } | undefined;
    let expected: string[] | undefined;
    let groups: Encoded[][] | undefined;
    for (const round of rounds({ max: MAX_ROUNDS })) {
      meta = await this.writable(ref, meta);
      prepared ??= input.prepare(toSessionRecord(meta));
      expected ??= prepared.expectedSuffix.map(canonicalJson);
      const k = expected.length;
      const tail = await this.tail(pk, meta, k);
      if (!matches(tail, expected)) {
        // A mismatch is final only when DynamoDB's record says so and the key shows no first try
        // (a retry whose first try replaced the suffix sees it gone): both read afresh, beside.
        const [fresh, record] = await Promise.all([this.table.getMeta(ref), this.table.getItem<IdempotencyRecord>(idemKey)]);
        const landed = liveRecord(record, this.table.now());
        if (landed) return { replayed: true, response: replay(landed, idem) };
        if (fresh && fresh.version !== meta.version) {
          meta = fresh;
          continue;
        }
        throw new SuffixMismatchError(ref.sessionId, (fresh ?? meta).messageCount);
      }
      const n = prepared.replacement.items.length;
      const addedTokens = prepared.replacement.tokenEstimates.reduce((a, b) => a + b, 0);
      const removedTokens = tail.reduce((a, it) => a + it.tokens, 0);
      // A6: removing an item an in-flight attempt snapshotted makes that attempt's commit fail (stale).
      const stale = meta.attempt !== undefined && tail.some((it) => it.seq <= (meta!.attempt!.watermark ?? 0));
      const removals = removalEntries(this.table, tail, meta.rows !== undefined);
      groups ??= packRows(encodeItems(prepared.replacement.items, prepared.replacement.tokenEstimates));
      let rows = rowItems(pk, meta.generation, meta.lastSeq + 1, groups);
      const fixed = 2 + removals.entries.length;
      if (fixed + rows.heads.length + rows.parts.length > TRANSACTION_ENTRIES || rows.bytes + 20_000 > this.table.transactionBytes) {
        // A7 beyond one transaction: the chunks go first under a write id nobody reads (as appends do).
        ahead.w ??= await writeParts(this.table, pk, groups);
        rows = rowItems(pk, meta.generation, meta.lastSeq + 1, groups, ahead.w);
      }
      const entryCount = fixed + rows.heads.length + (ahead.w ? 1 : rows.parts.length);
      if (entryCount > TRANSACTION_ENTRIES) throw new SuffixTooLongError(tail.length, entryCount, TRANSACTION_ENTRIES);
      const after: MetaItem = {
        ...meta,
        lastSeq: meta.lastSeq + n,
        messageCount: meta.messageCount - k + n,
        tokenEstimate: meta.tokenEstimate - removedTokens + addedTokens,
        version: meta.version + 1,
        rows: (meta.rows ?? 0) - removals.rowsGone + rows.heads.length + (ahead.w ? 0 : rows.parts.length),
      };
      if (stale) after.attempt = { ...meta.attempt!, stale: true };
      // T2: a turn that replaced items from before it began cannot be rolled back (they would not come back).
      const beforeTurn = input.turn !== undefined && tail.some((it) => it.seq <= (meta!.turnFrom ?? meta!.lastSeq));
      const turnSet = `${beforeTurn ? ', #turnGen = :noGen' : ''}`;
      const turnAdd = input.turn ? ', #turnAppended :n' : '';
      const session = toSessionRecord(after);
      const response = input.respond(session, k, n);
      const entries: TransactItem[] = [
        this.table.metaUpdate(
          ref,
          {
            update: `SET #lastSeq = :last${stale ? ', #attempt.#stale = :true' : ''}${turnSet} ADD #messageCount :delta, #tokenEstimate :tok, #rows :rows, #version :one${turnAdd}`,
            condition: `${replaceSuffixCondition(meta, stale)} AND ${turnClause(input.turn)}`,
          },
          {
            ...turnValues(input.turn),
            ...(input.turn ? { ':n': n } : {}),
            ...(beforeTurn ? { ':noGen': REWROTE_BEFORE_TURN } : {}),
            ':last': after.lastSeq,
            ':delta': n - k,
            ':tok': addedTokens - removedTokens,
            ':rows': rows.heads.length + (ahead.w ? 0 : rows.parts.length) - removals.rowsGone,
            ':one': 1,
            ':now': this.table.now(),
            ':v': meta.version,
            ...(stale ? { ':true': true, ':aid': meta.attempt!.attemptId } : {}),
          },
        ),
        ...removals.entries,
        ...rows.heads.map((m) => this.table.put(m)),
        ...(ahead.w ? [partsTaskCheck(this.table, pk, ahead.w)] : rows.parts.map((m) => this.table.put(m))),
        this.table.put(idempotencyRecord(idemKey, idem, response, this.table.now(), this.idempotencyTtlSeconds), IDEMPOTENCY_CONDITION, {
          ':nowSec': Math.floor(this.table.now() / 1000),
        }),
      ];
      try {
        await this.table.transact('replace suffix', entries);
        this.table.records.set(after);
        return { replayed: false, session, removed: k, appended: n, response };
      } catch (err) {
        const idemAt = entries.length - 1;
        if (conditionFailedAt(err, idemAt)) return { replayed: true, response: replay(oldItemOf<IdempotencyRecord>(err, idemAt)!, idem) };
        if (conditionFailedAt(err, 0)) {
          meta = oldImageOf(err, 0);
          if (meta) this.table.records.set(meta);
          else this.table.records.drop(pk);
          // T3/T5: refused for its turn (or for having none): answered, not retried.
          const refusal = meta && isLiveTip(meta) ? writeRefusal(meta, input.turn, this.table.now()) : null;
          if (refusal) throw refusal;
        } else if (entries.slice(1, 1 + removals.entries.length).some((_, i) => conditionFailedAt(err, i + 1))) {
          meta = await this.table.getMeta(ref);
        } else throw err;
        await sleep(backoffDelay(Math.min(round, 3), { baseDelayMs: 5, maxDelayMs: 100 }));
      }
    }
    throw new StoreRetryableError(`replace suffix on ${ref.sessionId}: the session kept changing`);
  }

  /** The session is live (404 / 409 naming the tip otherwise) and no attempt's seal is up. */
  private async writable(ref: SessionRef, known: MetaItem | undefined): Promise<MetaItem> {
    let read = known;
    for (;;) {
      const meta = await assertLive(this.table, ref, read);
      const wait = (meta.seal?.until ?? 0) - this.table.now();
      if (wait <= 0) return meta;
      await sleep(Math.min(SEAL_POLL_MS, wait));
      read = await this.table.getMeta(ref);
    }
  }

  /** The live generation's last `k` items in order (none asked: no read). */
  private async tail(pk: string, meta: MetaItem, k: number): Promise<StoredItem[]> {
    if (k === 0) return [];
    if (k > meta.messageCount) return [];
    const { items } = await this.table.queryRange(pk, meta.generation, 1, meta.lastSeq, {
      limit: k,
      newestFirst: true,
      rowLimit: (n) => rowLimit(meta, n),
    });
    return items.reverse();
  }
}

/** The stored tail equals the expected suffix, item by item, as canonical JSON. */
function matches(tail: readonly StoredItem[], expected: readonly string[]): boolean {
  if (tail.length !== expected.length) return false;
  return tail.every((it, i) => canonicalJson(JSON.parse(it.body)) === expected[i]);
}

/** The writes that remove `tail` (the session's last items) from their rows, and the rows the record stops counting. */
function removalEntries(table: Table, tail: readonly StoredItem[], counted: boolean): { entries: TransactItem[]; rowsGone: number } {
  const byRow = new Map<string, { item: StoredItem; n: number }>();
  for (const it of tail) {
    const seen = byRow.get(it.row.sk);
    if (seen) seen.n++;
    else byRow.set(it.row.sk, { item: it, n: 1 });
  }
  const entries: TransactItem[] = [];
  let gone = 0;
  for (const { item, n } of byRow.values()) {
    entries.push(...shrinkRow(table, item.row, n));
    gone += rowsGone(counted, item.row, n);
  }
  return { entries, rowsGone: gone };
}
