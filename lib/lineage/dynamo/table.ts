// Table mechanics shared by the store's parts: retried sends, the META read that fills
// legacy defaults once, conditional updates and transactions that hand back the item's old
// image when a condition fails (so a loser needs no re-read), and item-range queries.
import { randomUUID } from 'node:crypto';
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type QueryCommandInput,
  type TransactWriteCommandInput,
  type UpdateCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { SessionRef } from '../../session-ref.js';
import { SessionNotFoundError, StoreOutcomeUnknownError, StoreRetryableError } from '../errors.js';
import { deleteAll, inPages, putAll } from './batch-writes.js';
import { expression, updateExpression, type ExpressionParts } from './expression.js';
import type { Item } from '../../items/types.js';
import { withDefaults, type MetaItem, type StoredMeta } from './meta-row.js';
import { DEFAULT_ATTEMPT_SHARDS, DEFAULT_ROTATION_SHARDS, metaKey, SHARD_QUERY_CONCURRENCY } from './keys.js';
import { RecordCache } from './record-cache.js';
import { headOfPart, isHeadSk, itemRange, itemsOfRow, remotePartPrefix, type RawRow, type StoredItem } from './rows.js';
import { EXISTS } from './conditions.js';
import { cancellationCodes, DEFAULT_RETRY, isConditionFailure, mayHaveApplied, withRetry, type RetryOptions } from './retry.js';
import { errorFields } from '../../errors.js';
import { silentLogger, type Logger } from '../../logger.js';
import { WriteBudget, writeUnits, type PacingClock } from './write-budget.js';

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];
export type Key = { pk: string; sk: string };
/** DynamoDB's transaction limits: 100 entries, 4 MB (less room for the record updates and keys). */
export const TRANSACTION_ENTRIES = 100;
export const TRANSACTION_BYTES = 3_900_000;
/** BatchGetItem's limit of keys per call. */
const BATCH_GET_PAGE = 100;
/** BatchWriteItem's limit of requests per call: a paced delete spends one batch's units at a time. */
const DELETE_BATCH = 25;

export interface TableOptions {
  client: DynamoDBClient;
  tableName: string;
  now?: () => number;
  /** Backoff for transaction conflicts and version races (default 5 tries). */
  retry?: Partial<RetryOptions>;
  /** Shards of the sparse attemptsByExpiry / rotationsByTime indexes (raise only; see keys.ts). */
  attemptShards?: number;
  rotationShards?: number;
  /**
   * Bytes one transaction may carry before an append or a commit writes its rows first (default
   * 3.9 MB, under DynamoDB's 4 MB). Tests lower it to take that path without writing megabytes.
   */
  transactionBytes?: number;
  /** Bounds of the container's record cache (P5; record-cache.ts). */
  recordCacheEntries?: number;
  recordCacheAgeMs?: number;
  /** Where background failures the caller cannot see are reported (the runtime's logger; silent when unset). */
  logger?: Logger;
  /** Per-partition write budget of archives and purges (write-budget.ts); tests inject the clock. */
  backgroundWriteUnitsPerSecond?: number;
  pacingClock?: PacingClock;
}

export class Table {
  readonly doc: DynamoDBDocumentClient;
  readonly name: string;
  readonly now: () => number;
  readonly retry: RetryOptions;
  readonly attemptShards: number;
  readonly rotationShards: number;
  private readonly logger: Logger;
  readonly transactionBytes: number;
  /** The records this container has seen (P5): every META read or old image refreshes it. */
  readonly records: RecordCache;
  /** Paces archives and purges per partition (issue 35 item 6). */
  readonly writeBudget: WriteBudget;

  constructor(opts: TableOptions) {
    // Items are stripped of undefined values by the callers rather than through translateConfig:
    // DynamoDBDocumentClient.from writes translateConfig onto the shared client's config, so another
    // wrapper of the same client would silently replace ours.
    this.doc = DynamoDBDocumentClient.from(opts.client);
    this.name = opts.tableName;
    this.now = opts.now ?? Date.now;
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    this.attemptShards = opts.attemptShards ?? DEFAULT_ATTEMPT_SHARDS;
    this.rotationShards = opts.rotationShards ?? DEFAULT_ROTATION_SHARDS;
    this.logger = opts.logger ?? silentLogger;
    this.transactionBytes = opts.transactionBytes ?? TRANSACTION_BYTES;
    this.records = new RecordCache(this.now, opts.recordCacheEntries, opts.recordCacheAgeMs);
    this.writeBudget = new WriteBudget(opts.backgroundWriteUnitsPerSecond, opts.pacingClock);
  }

  send<T>(what: string, op: () => Promise<T>): Promise<T> {
    return withRetry(what, op, this.retry);
  }

  /** A failure off the answer's path (cleanup, marks): logged with its cause, never thrown. */
  warn(message: string, err: unknown, fields: Record<string, unknown> = {}): void {
    this.logger.warn(message, { ...fields, error: errorFields(err) });
  }

  isoNow(): string {
    return new Date(this.now()).toISOString();
  }

  /** The META item (deleted sessions included), with legacy defaults filled. */
  async getMeta(ref: SessionRef): Promise<MetaItem | undefined> {
    const out = await this.send('read session', () =>
      this.doc.send(new GetCommand({ TableName: this.name, Key: metaKey(ref), ConsistentRead: true })),
    );
    const meta = out.Item ? withDefaults(out.Item as StoredMeta) : undefined;
    if (meta) this.records.set(meta);
    else this.records.drop(metaKey(ref).pk);
    return meta;
  }

  /** A live-or-ended session; a missing or deleted one is SessionNotFoundError. */
  async requireMeta(ref: SessionRef): Promise<MetaItem> {
    const meta = await this.getMeta(ref);
    if (!meta || meta.deletedAt) throw new SessionNotFoundError(ref.sessionId);
    return meta;
  }

  async getItem<T>(key: Key): Promise<T | undefined> {
    const out = await this.send('read', () => this.doc.send(new GetCommand({ TableName: this.name, Key: key, ConsistentRead: true })));
    return out.Item as T | undefined;
  }

  /** One update of a META item; a failed condition reaches the caller carrying the old image (oldImageOf). */
  update(
    what: string,
    ref: SessionRef,
    parts: ExpressionParts,
    values: Record<string, unknown>,
    returnValues?: 'ALL_NEW' | 'ALL_OLD',
  ): Promise<UpdateCommandOutput> {
    return this.send(what, () =>
      this.doc.send(
        new UpdateCommand({
          TableName: this.name,
          Key: metaKey(ref),
          ...expression(parts, values),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...(returnValues && { ReturnValues: returnValues }),
        }),
      ),
    );
  }

  /** A META update whose failing condition is an answer, not an error: false when it did. */
  async updateIf(what: string, ref: SessionRef, parts: ExpressionParts, values: Record<string, unknown>): Promise<boolean> {
    try {
      await this.update(what, ref, parts, values);
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** The Update entry of a transaction on a session's META (old image returned on a failed condition). */
  metaUpdate(ref: SessionRef, parts: ExpressionParts & { update: string }, values: Record<string, unknown>): TransactItem {
    return {
      Update: {
        TableName: this.name,
        Key: metaKey(ref),
        ...updateExpression(parts, values),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
  }

  put(item: object, condition?: string, values?: Record<string, unknown>): TransactItem {
    return {
      Put: {
        TableName: this.name,
        Item: withoutUndefined(item) as Record<string, unknown>,
        ...(condition ? { ...expression({ condition }, values), ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
      },
    };
  }

  async transact(what: string, items: TransactItem[]): Promise<void> {
    // One token for every resend of this request: a transaction that went through but answered
    // with an error (a 500, a lost response) is not applied twice when retried (DynamoDB keeps
    // the token for 10 minutes).
    const token = randomUUID();
    try {
      await this.send(what, () => this.doc.send(new TransactWriteCommand({ ClientRequestToken: token, TransactItems: items })));
    } catch (err) {
      // Every try was sent and none answered: it may have been applied (now or when a stalled
      // DynamoDB resumes). Not "busy, nothing applied": a caller must not repeat it blindly.
      if (err instanceof StoreRetryableError && mayHaveApplied(err.cause))
        throw new StoreOutcomeUnknownError(`${what}: DynamoDB did not confirm the transaction (${(err.cause as Error).name})`, err.cause);
      throw err;
    }
  }

  /**
   * Items of one generation with from <= seq <= to, in order (or newest first), stopping at
   * `limit` / `maxBytes`, assembled from packed rows, parts and one-item rows alike (rows.ts).
   */
  async queryRange(
    pk: string,
    generation: number,
    from: number,
    to: number,
    opts: {
      limit?: number;
      maxBytes?: number;
      newestFirst?: boolean;
      rowLimit?: (items: number) => number;
      /** Rows asked for per Query page when `limit` does not say (P6: a bounded read never asks for more than it can use). */
      pageRows?: number;
      /** maxBytes never cuts the first row (P6). */
      wholeFirstRow?: boolean;
    } = {},
  ): Promise<{ items: StoredItem[]; more: boolean }> {
    if (to < from) return { items: [], more: false };
    const items: StoredItem[] = [];
    const maxBytes = opts.maxBytes ?? Number.POSITIVE_INFINITY;
    const desc = opts.newestFirst === true;
    const range = itemRange(generation, from, to);
    const partData = new Map<string, string[]>();
    let pending: RawRow | undefined;
    let bytes = 0;
    /** The last sequence number emitted (the lowest, newest first). */
    let emitted: number | undefined;
    let start: Record<string, unknown> | undefined;
    /** Emits a complete row's items in range; true when the page is full (more is then known). */
    const emit = async (head: RawRow, parts: string[]): Promise<'full' | 'cut' | undefined> => {
      const data = head.w ? await this.remoteParts(pk, head.w, head.h ?? 0) : parts;
      const all = itemsOfRow(head, data);
      // I4/A6 defence: a row that overlaps items already emitted is a leftover of an earlier
      // commit round (commit.ts removes them; data from before that fix may still hold some).
      if (emitted !== undefined && all.length > 0 && (desc ? all.at(-1)!.seq >= emitted : all[0]!.seq <= emitted)) return undefined;
      const rowItems = all.filter((it) => it.seq >= from && it.seq <= to);
      if (desc) rowItems.reverse();
      for (let i = 0; i < rowItems.length; i++) {
        const it = rowItems[i]!;
        // A5: pages are bounded in UTF-8 bytes, as the response carries them (not UTF-16 units).
        bytes += Buffer.byteLength(it.body, 'utf8');
        // A page always carries at least one item, however large, so paging makes progress.
        // P6: a bounded read takes its first row whole, however large (a part is whole rows).
        if (bytes > maxBytes && items.length > 0 && !(opts.wholeFirstRow && items[0]!.row.sk === it.row.sk)) return 'cut';
        items.push(it);
        emitted = it.seq;
        if (opts.limit !== undefined && items.length >= opts.limit) return i < rowItems.length - 1 ? 'cut' : 'full';
      }
      return undefined;
    };
    do {
      // Rows to ask for: packed rows hold many items, so the item count alone would over-read.
      const left = opts.limit === undefined ? undefined : Math.max(1, opts.limit - items.length);
      const want = left === undefined ? opts.pageRows : (opts.rowLimit?.(left) ?? left);
      const out = await this.send('read items', () =>
        this.doc.send(
          new QueryCommand({
            TableName: this.name,
            ConsistentRead: true,
            ...expression({ keyCondition: 'pk = :pk AND sk BETWEEN :from AND :to' }, { ':pk': pk, ':from': range.from, ':to': range.to }),
            ...(desc ? { ScanIndexForward: false } : {}),
            ...(want !== undefined ? { Limit: want } : {}),
            ExclusiveStartKey: start,
          }),
        ),
      );
      start = out.LastEvaluatedKey;
      const rows = (out.Items ?? []) as RawRow[];
      for (let r = 0; r < rows.length; r++) {
        const row = rows[r]!;
        let done: RawRow | undefined;
        if (!isHeadSk(row.sk)) {
          const head = headOfPart(row.sk);
          partData.set(head, [...(partData.get(head) ?? []), row.data ?? '']);
          if (!desc && pending?.sk === head && partData.get(head)!.length >= (pending.parts ?? 0)) done = pending;
        } else if (desc || row.w || !row.parts) {
          done = row;
        } else {
          pending = row;
        }
        if (!done) continue;
        const parts = partData.get(done.sk) ?? [];
        partData.delete(done.sk);
        if (done === pending) pending = undefined;
        const stop = await emit(done, desc ? parts.reverse() : parts);
        if (stop) return { items, more: stop === 'cut' || r < rows.length - 1 || start !== undefined };
      }
    } while (start);
    return { items, more: false };
  }

  /** The chunks of a row written beyond one transaction (rows.ts), in order. */
  private async remoteParts(pk: string, w: string, h: number): Promise<string[]> {
    const rows = await this.queryPrefix<RawRow>(pk, remotePartPrefix(w, h));
    return rows.map((r) => r.data ?? '');
  }

  /** Every stored row under `pk` whose sort key starts with `prefix` (whole items). */
  async queryPrefix<T>(pk: string, prefix: string): Promise<T[]> {
    const found: T[] = [];
    for await (const page of this.pagesWithPrefix<T>(pk, prefix)) found.push(...page);
    return found;
  }

  /** The same rows one Query page (at most 1 MB) at a time, so a big generation is never held whole. */
  async *pagesWithPrefix<T>(pk: string, prefix: string): AsyncGenerator<T[]> {
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.send('read rows', () =>
        this.doc.send(
          new QueryCommand({
            TableName: this.name,
            ConsistentRead: true,
            ...expression({ keyCondition: 'pk = :pk AND begins_with(sk, :prefix)' }, { ':pk': pk, ':prefix': prefix }),
            ExclusiveStartKey: start,
          }),
        ),
      );
      yield (out.Items ?? []) as T[];
      start = out.LastEvaluatedKey;
    } while (start);
  }

  /**
   * Sets `expiresAt` on a row only while it exists (H4, A6): a delete and purge that ran since
   * the row was read must not be undone by a put bringing its body back. Paced under the
   * partition's budget. False when the row was gone.
   */
  async expireRow(row: Key & object, expiresAt: number): Promise<boolean> {
    await this.writeBudget.take(row.pk, writeUnits(row));
    try {
      await this.send('archive row', () =>
        this.doc.send(
          new UpdateCommand({
            TableName: this.name,
            Key: { pk: row.pk, sk: row.sk },
            ...expression({ update: 'SET #expiresAt = :exp', condition: EXISTS }, { ':exp': expiresAt }),
          }),
        ),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** Deletes every row under `pk` whose sort key starts with `prefix`, a page at a time, paced (issue 35 item 6). Returns how many. */
  async deletePaced(pk: string, prefix: string): Promise<number> {
    let deleted = 0;
    for await (const rows of this.pagesWithPrefix<Key>(pk, prefix)) {
      for (let i = 0; i < rows.length; i += DELETE_BATCH) {
        const batch = rows.slice(i, i + DELETE_BATCH);
        await this.writeBudget.take(
          pk,
          batch.reduce((n, r) => n + writeUnits(r), 0),
        );
        await this.deleteAll(batch.map((r) => ({ pk: r.pk, sk: r.sk })));
        deleted += batch.length;
      }
    }
    return deleted;
  }

  async readItems(pk: string, generation: number, from: number, to: number): Promise<Item[]> {
    return (await this.queryRange(pk, generation, from, to)).items.map(itemOf);
  }

  async keysWithPrefix(pk: string, prefix: string): Promise<Key[]> {
    const keys: Key[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const input: QueryCommandInput = {
        TableName: this.name,
        ConsistentRead: true,
        ProjectionExpression: 'pk, sk',
        ...expression({ keyCondition: 'pk = :pk AND begins_with(sk, :prefix)' }, { ':pk': pk, ':prefix': prefix }),
        ExclusiveStartKey: start,
      };
      const out = await this.send('list keys', () => this.doc.send(new QueryCommand(input)));
      keys.push(...((out.Items ?? []) as Key[]));
      start = out.LastEvaluatedKey;
    } while (start);
    return keys;
  }

  async queryIndex<T>(input: Omit<QueryCommandInput, 'TableName'>, limit?: number): Promise<T[]> {
    const items: T[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.send('query index', () =>
        this.doc.send(
          new QueryCommand({ ...input, TableName: this.name, ExclusiveStartKey: start, ...(limit ? { Limit: limit - items.length } : {}) }),
        ),
      );
      items.push(...((out.Items ?? []) as T[]));
      start = out.LastEvaluatedKey;
    } while (start && (limit === undefined || items.length < limit));
    return items;
  }

  async batchGetMetas(keys: readonly Key[]): Promise<MetaItem[]> {
    const found: MetaItem[] = [];
    const requested: Record<string, unknown>[] = keys.map((k) => ({ pk: k.pk, sk: k.sk }));
    await inPages('batch get', requested, BATCH_GET_PAGE, this.retry, async (pending) => {
      const out = await this.send('batch get', () =>
        this.doc.send(new BatchGetCommand({ RequestItems: { [this.name]: { Keys: pending, ConsistentRead: true } } })),
      );
      found.push(...((out.Responses?.[this.name] ?? []) as StoredMeta[]).map(withDefaults));
      return (out.UnprocessedKeys?.[this.name]?.Keys ?? []) as Record<string, unknown>[];
    });
    return found;
  }

  putAll(items: object[]): Promise<void> {
    return putAll(this.doc, this.name, items.map(withoutUndefined), this.retry);
  }

  deleteAll(keys: Key[]): Promise<void> {
    return deleteAll(this.doc, this.name, keys, this.retry);
  }
}

/** The item a failed condition saw: `index` is the transaction entry (0 for a plain update). */
export function oldImageOf(err: unknown, index = 0): MetaItem | undefined {
  const e = err as { Item?: Record<string, AttributeValue>; CancellationReasons?: { Item?: Record<string, AttributeValue> }[] };
  const raw = e?.CancellationReasons ? e.CancellationReasons[index]?.Item : e?.Item;
  return raw ? withDefaults(unmarshall(raw) as StoredMeta) : undefined;
}

/** The raw old image of a transaction entry whose condition failed (any item type). */
export function oldItemOf<T>(err: unknown, index: number): T | undefined {
  const raw = (err as { CancellationReasons?: { Item?: Record<string, AttributeValue> }[] })?.CancellationReasons?.[index]?.Item;
  return raw ? (unmarshall(raw) as T) : undefined;
}

/** Whether transaction entry `index` failed its condition (a plain update: index 0). */
export function conditionFailedAt(err: unknown, index: number): boolean {
  if (!isConditionFailure(err)) return false;
  const codes = cancellationCodes(err);
  return codes.length === 0 ? index === 0 : codes[index] === 'ConditionalCheckFailed';
}

/** `fn` over every shard, at most SHARD_QUERY_CONCURRENCY at once; results in shard order. */
export async function forEachShard<R>(shards: readonly string[], fn: (shard: string) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(shards.length);
  for (let i = 0; i < shards.length; i += SHARD_QUERY_CONCURRENCY) {
    const batch = await Promise.all(shards.slice(i, i + SHARD_QUERY_CONCURRENCY).map(fn));
    batch.forEach((r, j) => (out[i + j] = r));
  }
  return out;
}

/** The client's item, as it appended it. */
export function itemOf(stored: Pick<StoredItem, 'body'>): Item {
  return JSON.parse(stored.body) as Item;
}

export function withoutUndefined<T extends object>(item: T): T {
  return Object.fromEntries(Object.entries(item).filter(([, v]) => v !== undefined)) as T;
}
