// The lineage store on DynamoDB: what makes a fork impossible (SPEC I1, I2, I4, L6, C3, C10, C11, S1-S3).
//
// Layout (one table, pk/sk): session META at `T#<tenant>#S#<id>` / `META`; messages under the same pk at
// `MSG#<generation>#<seq>`. Reads of the active generation are bounded by META.lastSeq, so items a failed
// commit left beyond it are never visible.
//
// "Pending" child messages: a rotation writes the child's messages BEFORE the transaction that creates the
// child META. A child is pending exactly while its META does not exist: no session can be read without its
// META, so pending messages are invisible, and cleanup (abandon, failed commit, sweep) deletes messages
// only under a child id whose META is absent.
//
// In-place generations are numbered by the attempt's fence (unique and increasing per session because
// beginAttempt only accepts a newer fence), so a failed attempt's half-written generation can never be
// mistaken for, or collide with, another attempt's.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
  type QueryCommandInput,
  type TransactWriteCommandInput,
  type UpdateCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import type { Message } from '../messages.js';
import { parseSessionKey, type SessionRef } from '../session-ref.js';
import { deleteAll, putAll } from './batch-writes.js';
import {
  FenceStaleError,
  LineageError,
  RotationLostError,
  SessionEndedError,
  SessionExistsError,
  SessionNotFoundError,
  StoreRetryableError,
} from './errors.js';
import { expression, updateExpression, type ExpressionParts } from './expression.js';
import {
  assertMessagesFit,
  fromMessageItem,
  toMessageItem,
  toSessionRecord,
  type MessageItem,
  type MetaItem,
} from './items.js';
import {
  allAttemptShards,
  ATTEMPTS_INDEX,
  attemptShardOf,
  CHILDREN_INDEX,
  generationPrefix,
  MSG_PREFIX,
  messageSk,
  metaKey,
  sessionPk,
} from './keys.js';
import { DEFAULT_RETRY, isConditionFailure, sleep, backoffDelay, withRetry, type RetryOptions } from './retry.js';
import type {
  AttemptRecord,
  BegunAttempt,
  CreateSessionInput,
  ExpiredAttempt,
  ForkReport,
  InPlaceCommitted,
  LineageStore,
  RotationCommitted,
  SessionRecord,
} from './types.js';

export interface DynamoLineageStoreOptions {
  client: DynamoDBClient;
  tableName: string;
  /** TTL of an archived (replaced) generation; default 7 days (SPEC C11). */
  archiveRetentionSeconds?: number;
  now?: () => number;
  /** Backoff for throttling / transaction conflicts (default 5 tries). */
  retry?: Partial<RetryOptions>;
  /** Problems that do not change an outcome (e.g. archiving the old generation failed after the flip). */
  onWarning?: (warning: string) => void;
}

const DEFAULT_ARCHIVE_RETENTION_S = 7 * 24 * 3600;
/** Transactions carry at most 100 items and 4 MB: one slot is the META update. */
/** Messages one append transaction holds (100 items less the META update); bigger appends are chunked. */
export const MAX_ATOMIC_APPEND_MESSAGES = 99;
const APPEND_CHUNK_ITEMS = MAX_ATOMIC_APPEND_MESSAGES;
const APPEND_CHUNK_BYTES = 3_500_000;
/** Re-reads of the concurrent tail / append version races before giving up as retryable. */
const MAX_VERSION_ROUNDS = 20;
const ATTEMPT_ATTRS = 'REMOVE #attempt, #attemptShard, #leaseExpiresAt, #attemptWatermark';

type CommitMode = 'rotate' | 'in_place';
type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export class DynamoLineageStore implements LineageStore {
  private readonly doc: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly retention: number;
  private readonly now: () => number;
  private readonly retry: RetryOptions;
  private readonly warn: (w: string) => void;

  constructor(opts: DynamoLineageStoreOptions) {
    // Items are stripped of undefined values here (withoutUndefined) rather than through translateConfig:
    // DynamoDBDocumentClient.from writes translateConfig onto the shared client's config, so another
    // wrapper of the same client would silently replace ours.
    this.doc = DynamoDBDocumentClient.from(opts.client);
    this.table = opts.tableName;
    this.retention = opts.archiveRetentionSeconds ?? DEFAULT_ARCHIVE_RETENTION_S;
    this.now = opts.now ?? Date.now;
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    this.warn = opts.onWarning ?? (() => undefined);
  }

  // ---- fencing (SPEC L6) ----

  async nextFence(key: string): Promise<number> {
    const ref = parseSessionKey(key);
    for (;;) {
      let out: UpdateCommandOutput;
      try {
        out = await this.updateMeta(
          'next fence',
          ref,
          { update: 'ADD #fenceCounter :one', condition: 'attribute_exists(pk)' },
          { ':one': 1 },
          'ALL_NEW',
        );
      } catch (err) {
        if (isConditionFailure(err)) throw new SessionNotFoundError(ref.sessionId);
        throw err;
      }
      const fence = Number(out.Attributes?.fenceCounter);
      const generation = Number(out.Attributes?.generation ?? 0);
      if (fence > generation) return fence;
      // A record from before fencing can carry a generation but no counter. Every fence must be
      // above every generation, since in-place generations are numbered by fence (C3, C11):
      // lift the counter to the generation (unless another issuer moved it) and draw again.
      await this.updateMetaIf('seed fence', ref, { update: 'SET #fenceCounter = :gen', condition: '#fenceCounter = :seen' }, {
        ':gen': generation,
        ':seen': fence,
      });
    }
  }

  // ---- sessions and messages ----

  async createSession(input: CreateSessionInput): Promise<SessionRecord> {
    const ref = { tenantId: input.tenantId, sessionId: input.sessionId ?? randomUUID() };
    const item: MetaItem = {
      ...metaKey(ref),
      ...ref,
      source: input.source,
      metadata: input.metadata === undefined ? undefined : (JSON.parse(JSON.stringify(input.metadata)) as Record<string, unknown>),
      createdAt: this.isoNow(),
      generation: 0,
      messageCount: 0,
      lastSeq: 0,
      version: 1,
    };
    try {
      await this.send('create session', () =>
        this.doc.send(new PutCommand({ TableName: this.table, Item: withoutUndefined(item), ConditionExpression: 'attribute_not_exists(pk)' })),
      );
    } catch (err) {
      if (isConditionFailure(err)) throw new SessionExistsError(ref.sessionId);
      throw err;
    }
    return toSessionRecord(item);
  }

  async getSession(ref: SessionRef): Promise<SessionRecord | null> {
    const meta = await this.readMeta(ref);
    return meta ? toSessionRecord(meta) : null;
  }

  async appendMessages(ref: SessionRef, messages: readonly Message[]): Promise<{ session: SessionRecord; appended: number }> {
    const pk = sessionPk(ref);
    // Measure everything first: one message too large refuses the whole call, nothing written.
    const sizes = assertMessagesFit(pk, 0, 1, messages);
    let session: SessionRecord | null = null;
    for (const [start, end] of chunkBySize(sizes, APPEND_CHUNK_ITEMS, APPEND_CHUNK_BYTES)) {
      session = await this.appendChunk(ref, messages.slice(start, end));
    }
    if (!session) {
      const meta = await this.requireMeta(ref);
      if (meta.endedAt) throw new SessionEndedError(ref.sessionId, meta.childSessionId ?? null);
      session = toSessionRecord(meta);
    }
    return { session, appended: messages.length };
  }

  /** One transaction: META version check + messages at lastSeq+1...; never looks at the attempt (SPEC I4). */
  private async appendChunk(ref: SessionRef, chunk: readonly Message[]): Promise<SessionRecord> {
    const pk = sessionPk(ref);
    for (let round = 0; round < MAX_VERSION_ROUNDS; round++) {
      const meta = await this.requireMeta(ref);
      if (meta.endedAt) throw new SessionEndedError(ref.sessionId, meta.childSessionId ?? null);
      const generation = meta.generation ?? 0;
      const lastSeq = meta.lastSeq ?? 0;
      const next: MetaItem = {
        ...meta,
        lastSeq: lastSeq + chunk.length,
        messageCount: (meta.messageCount ?? 0) + chunk.length,
        version: (meta.version ?? 0) + 1,
      };
      try {
        await this.transactOnMeta(
          'append messages',
          ref,
          {
            update: 'SET #lastSeq = :last, #messageCount = :count, #version = :next',
            condition: `${versionCondition(meta)} AND attribute_not_exists(#endedAt)`,
          },
          { ':last': next.lastSeq, ':count': next.messageCount, ':next': next.version, ':v': meta.version },
          chunk.map((m, i) => ({ Put: { TableName: this.table, Item: toMessageItem(pk, generation, lastSeq + 1 + i, m) } })),
        );
        return toSessionRecord(next);
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
        // Another append, a begin or a commit moved the version: re-read and go again.
        await sleep(backoffDelay(Math.min(round, 4), this.retry));
      }
    }
    throw new StoreRetryableError(`append to ${ref.sessionId}: version kept moving`);
  }

  async readMessages(ref: SessionRef): Promise<Message[]> {
    const meta = await this.requireMeta(ref);
    const items = await this.readRange(sessionPk(ref), meta.generation ?? 0, 1, meta.lastSeq ?? 0);
    return items.map(fromMessageItem);
  }

  async lineage(ref: SessionRef): Promise<SessionRecord[]> {
    const start = await this.requireMeta(ref);
    const seen = new Set([start.sessionId]);
    const ancestors = await this.follow(ref.tenantId, start, (m) => m.parentSessionId, seen);
    const descendants = await this.follow(ref.tenantId, start, (m) => m.childSessionId, seen);
    return [...ancestors.reverse(), start, ...descendants].map(toSessionRecord);
  }

  /** The METAs reached by following `next` from `from` (excluded), stopping at a gap or a cycle. */
  private async follow(
    tenantId: string,
    from: MetaItem,
    next: (m: MetaItem) => string | undefined,
    seen: Set<string>,
  ): Promise<MetaItem[]> {
    const found: MetaItem[] = [];
    for (let cur = from, id = next(cur); id && !seen.has(id); id = next(cur)) {
      const meta = await this.readMeta({ tenantId, sessionId: id });
      if (!meta) break;
      seen.add(meta.sessionId);
      found.push(meta);
      cur = meta;
    }
    return found;
  }

  async children(ref: SessionRef): Promise<SessionRecord[]> {
    const keys = await this.queryAll<{ pk: string; sk: string }>({
      TableName: this.table,
      IndexName: CHILDREN_INDEX,
      ...expression({ keyCondition: '#parentKey = :pk' }, { ':pk': sessionPk(ref) }),
    });
    const metas = await this.batchGetMetas(keys);
    return metas
      .filter((m) => m.tenantId === ref.tenantId)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
      .map(toSessionRecord);
  }

  async touchActivity(ref: SessionRef, label: string): Promise<void> {
    // Deliberately no version bump: heartbeats must not make a commit's version check fail.
    // A session that is gone is not an error here.
    await this.updateMetaIf(
      'touch activity',
      ref,
      { update: 'SET #lastActivity = :mark', condition: 'attribute_exists(pk)' },
      { ':mark': { label, at: this.isoNow() } },
    );
  }

  // ---- compaction attempts ----

  async beginAttempt(
    ref: SessionRef,
    input: { holder: string; fence: number; leaseExpiresAt: number },
  ): Promise<BegunAttempt> {
    const pk = sessionPk(ref);
    const attempt: AttemptRecord = {
      attemptId: randomUUID(),
      holder: input.holder,
      fence: input.fence,
      startedAt: this.isoNow(),
      leaseExpiresAt: input.leaseExpiresAt,
      pendingChildId: randomUUID(),
    };
    let meta: MetaItem;
    let replaced: AttemptRecord | undefined;
    try {
      const out = await this.updateMeta(
        'begin attempt',
        ref,
        {
          update:
            'SET #fence = :fence, #attempt = :attempt, #attemptShard = :shard, #leaseExpiresAt = :exp, ' +
            '#attemptWatermark = if_not_exists(#lastSeq, :zero), #version = if_not_exists(#version, :zero) + :one',
          condition:
            'attribute_exists(pk) AND attribute_not_exists(#endedAt) AND attribute_not_exists(#childSessionId) ' +
            'AND (attribute_not_exists(#fence) OR #fence < :fence)',
        },
        {
          ':fence': input.fence,
          ':attempt': attempt,
          ':shard': attemptShardOf(pk),
          ':exp': input.leaseExpiresAt,
          ':zero': 0,
          ':one': 1,
        },
        'ALL_OLD',
      );
      // The old image tells us which attempt (if any) we replaced; the new one follows from the update.
      const old = out.Attributes as MetaItem;
      replaced = old.attempt;
      meta = {
        ...old,
        fence: input.fence,
        attempt,
        attemptShard: attemptShardOf(pk),
        leaseExpiresAt: input.leaseExpiresAt,
        attemptWatermark: old.lastSeq ?? 0,
        version: (old.version ?? 0) + 1,
      };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      const now = await this.requireMeta(ref);
      if (now.endedAt || now.childSessionId) throw new SessionEndedError(ref.sessionId, now.childSessionId ?? null);
      throw new FenceStaleError(ref.sessionId, input.fence);
    }
    if (replaced) {
      // A replaced attempt (crashed, or paused past its lease) can no longer commit, and the sweep
      // will never list it again: remove what it may have written now, or it is orphaned (S2).
      await this.removeLeftovers(ref, replaced).catch((err: unknown) => {
        this.warn(`cleanup of replaced attempt ${replaced?.attemptId} on ${ref.sessionId} failed: ${String(err)}`);
      });
    }
    const watermark = meta.attemptWatermark ?? 0;
    const items = await this.readRange(pk, meta.generation ?? 0, 1, watermark);
    return { attempt, session: toSessionRecord(meta), watermark, messages: items.map(fromMessageItem) };
  }

  async commitRotation(ref: SessionRef, attempt: AttemptRecord, compacted: readonly Message[]): Promise<RotationCommitted> {
    const parentPk = sessionPk(ref);
    const childRef = { tenantId: ref.tenantId, sessionId: attempt.pendingChildId };
    const childPk = sessionPk(childRef);
    assertMessagesFit(childPk, 0, 1, compacted);

    const current = await this.readMeta(ref);
    // A retry of a commit whose response was lost: the parent already names our child.
    if (current?.childSessionId === attempt.pendingChildId) return this.rotationResult(ref, current, compacted.length);
    let meta = this.assertCommittable(current, ref, attempt, 'rotate');

    const written: { pk: string; sk: string }[] = [];
    const tail: Message[] = [];
    try {
      await this.putMessages(childPk, 0, 1, compacted, written);
      let seen = meta.attemptWatermark ?? 0;
      for (let round = 0; ; round++) {
        // The concurrent tail (SPEC I4): appends after the watermark, up to the version we condition on.
        const fresh = (await this.readRange(parentPk, meta.generation ?? 0, seen + 1, meta.lastSeq ?? 0)).map(fromMessageItem);
        await this.putMessages(childPk, 0, compacted.length + tail.length + 1, fresh, written);
        tail.push(...fresh);
        seen = Math.max(seen, meta.lastSeq ?? 0);
        const at = this.isoNow();
        const count = compacted.length + tail.length;
        const child: MetaItem = {
          ...metaKey(childRef),
          ...childRef,
          source: meta.source,
          metadata: meta.metadata,
          createdAt: at,
          parentSessionId: ref.sessionId,
          parentKey: parentPk,
          createdByAttempt: attempt.attemptId,
          generation: 0,
          messageCount: count,
          lastSeq: count,
          version: 1,
        };
        const parentAfter: MetaItem = {
          ...withoutAttempt(meta),
          endedAt: at,
          endReason: 'compression',
          childSessionId: childRef.sessionId,
          version: (meta.version ?? 0) + 1,
        };
        try {
          await this.transactOnMeta(
            'commit rotation',
            ref,
            {
              update: `SET #endedAt = :at, #endReason = :reason, #childSessionId = :child, #version = :next ${ATTEMPT_ATTRS}`,
              condition: commitCondition(meta),
            },
            {
              ':at': at,
              ':reason': 'compression',
              ':child': childRef.sessionId,
              ':next': parentAfter.version,
              ':fence': attempt.fence,
              ':aid': attempt.attemptId,
              ':v': meta.version,
            },
            [{ Put: { TableName: this.table, Item: withoutUndefined(child), ConditionExpression: 'attribute_not_exists(pk)' } }],
          );
          return {
            parent: toSessionRecord(parentAfter),
            child: toSessionRecord(child),
            messages: [...compacted, ...tail],
            tailCarried: tail.length,
          };
        } catch (err) {
          meta = await this.afterFailedCommit(err, ref, attempt, 'rotate', round);
          if (meta.childSessionId === attempt.pendingChildId) return this.rotationResult(ref, meta, compacted.length);
        }
      }
    } catch (err) {
      await this.discardAfterFailure(ref, attempt, written);
      throw err;
    }
  }

  async commitInPlace(ref: SessionRef, attempt: AttemptRecord, compacted: readonly Message[]): Promise<InPlaceCommitted> {
    const pk = sessionPk(ref);
    const current = await this.readMeta(ref);
    if (current && isOurInPlaceCommit(current, attempt)) return this.inPlaceResult(ref, current, compacted.length);
    let meta = this.assertCommittable(current, ref, attempt, 'in_place');
    const oldGeneration = meta.generation ?? 0;
    const newGeneration = inPlaceGeneration(attempt, oldGeneration);
    assertMessagesFit(pk, newGeneration, 1, compacted);

    const written: { pk: string; sk: string }[] = [];
    const tail: Message[] = [];
    try {
      await this.putMessages(pk, newGeneration, 1, compacted, written);
      let seen = meta.attemptWatermark ?? 0;
      for (let round = 0; ; round++) {
        const fresh = (await this.readRange(pk, oldGeneration, seen + 1, meta.lastSeq ?? 0)).map(fromMessageItem);
        await this.putMessages(pk, newGeneration, compacted.length + tail.length + 1, fresh, written);
        tail.push(...fresh);
        seen = Math.max(seen, meta.lastSeq ?? 0);
        const count = compacted.length + tail.length;
        try {
          const out = await this.updateMeta(
            'commit in place',
            ref,
            {
              update: `SET #generation = :gen, #lastSeq = :count, #messageCount = :count, #version = :next ${ATTEMPT_ATTRS}`,
              condition: commitCondition(meta),
            },
            {
              ':gen': newGeneration,
              ':count': count,
              ':next': (meta.version ?? 0) + 1,
              ':fence': attempt.fence,
              ':aid': attempt.attemptId,
              ':v': meta.version,
            },
            'ALL_NEW',
          );
          await this.archiveGeneration(pk, oldGeneration);
          return { session: toSessionRecord(out.Attributes as MetaItem), messages: [...compacted, ...tail], tailCarried: tail.length };
        } catch (err) {
          meta = await this.afterFailedCommit(err, ref, attempt, 'in_place', round);
          if (isOurInPlaceCommit(meta, attempt)) {
            await this.archiveGeneration(pk, oldGeneration);
            return this.inPlaceResult(ref, meta, compacted.length);
          }
        }
      }
    } catch (err) {
      await this.discardAfterFailure(ref, attempt, written);
      throw err;
    }
  }

  async abandonAttempt(ref: SessionRef, attempt: AttemptRecord): Promise<void> {
    await this.clearAttempt(ref, attempt);
    await this.removeLeftovers(ref, attempt);
  }

  extendAttempt(ref: SessionRef, attempt: AttemptRecord, leaseExpiresAt: number): Promise<boolean> {
    return this.updateMetaIf(
      'extend attempt',
      ref,
      { update: 'SET #leaseExpiresAt = :exp, #attempt.leaseExpiresAt = :exp', condition: '#attempt.attemptId = :aid' },
      { ':exp': leaseExpiresAt, ':aid': attempt.attemptId },
    );
  }

  // ---- sweep (SPEC S1-S3) ----

  async listExpiredAttempts(now: number, limit = 100): Promise<ExpiredAttempt[]> {
    // Every shard is read and the page is filled round-robin, so attempts the sweep keeps
    // skipping in one shard (a lease still held) never starve the other shards (S1).
    const perShard = await Promise.all(
      allAttemptShards().map(async (shard) => {
        const out = await this.send('list expired attempts', () =>
          this.doc.send(
            new QueryCommand({
              TableName: this.table,
              IndexName: ATTEMPTS_INDEX,
              ...expression({ keyCondition: '#attemptShard = :shard AND #leaseExpiresAt < :now' }, { ':shard': shard, ':now': now }),
              Limit: limit,
            }),
          ),
        );
        return (out.Items ?? []) as { pk: string; sk: string }[];
      }),
    );
    const keys: { pk: string; sk: string }[] = [];
    for (let i = 0; keys.length < limit && perShard.some((items) => i < items.length); i++) {
      for (const items of perShard) if (i < items.length && keys.length < limit) keys.push(items[i]!);
    }
    // The index is eventually consistent: confirm each on the item itself.
    const expired: ExpiredAttempt[] = [];
    for (const key of keys) {
      const meta = await this.readMetaByKey(key);
      if (meta?.attempt && meta.attempt.leaseExpiresAt < now) {
        expired.push({ ref: { tenantId: meta.tenantId, sessionId: meta.sessionId }, attempt: meta.attempt });
      }
    }
    return expired;
  }

  async cleanExpiredAttempt(expired: ExpiredAttempt): Promise<{ cleaned: boolean; orphanMessagesRemoved: number }> {
    const cleaned = await this.clearAttempt(expired.ref, expired.attempt);
    // Even when the attempt was replaced, its leftovers are garbage: it can no longer commit.
    const orphanMessagesRemoved = await this.removeLeftovers(expired.ref, expired.attempt);
    return { cleaned, orphanMessagesRemoved };
  }

  /** A Scan of the sparse KEYS_ONLY `childrenByParent` index: it holds only child sessions, so it stays small. */
  async findForks(): Promise<ForkReport[]> {
    const byParent = new Map<string, { pk: string; sk: string }[]>();
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.send('find forks', () =>
        this.doc.send(new ScanCommand({ TableName: this.table, IndexName: CHILDREN_INDEX, ExclusiveStartKey: start })),
      );
      for (const item of (out.Items ?? []) as { pk: string; sk: string; parentKey: string }[]) {
        const list = byParent.get(item.parentKey) ?? [];
        list.push({ pk: item.pk, sk: item.sk });
        byParent.set(item.parentKey, list);
      }
      start = out.LastEvaluatedKey;
    } while (start);
    const forks: ForkReport[] = [];
    for (const keys of byParent.values()) {
      if (keys.length < 2) continue;
      const children = await this.batchGetMetas(keys);
      const first = children[0];
      if (!first?.parentSessionId) continue;
      forks.push({
        parent: { tenantId: first.tenantId, sessionId: first.parentSessionId },
        childSessionIds: children.map((c) => c.sessionId).sort(),
      });
    }
    return forks;
  }

  // ---- internals ----

  private send<T>(what: string, op: () => Promise<T>): Promise<T> {
    return withRetry(what, op, this.retry);
  }

  private isoNow(): string {
    return new Date(this.now()).toISOString();
  }

  /** One update of the session's META item; condition failures reach the caller. */
  private updateMeta(
    what: string,
    ref: SessionRef,
    parts: ExpressionParts,
    values: Record<string, unknown>,
    returnValues?: 'UPDATED_NEW' | 'ALL_NEW' | 'ALL_OLD',
  ): Promise<UpdateCommandOutput> {
    return this.send(what, () =>
      this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: metaKey(ref),
          ...expression(parts, values),
          ...(returnValues && { ReturnValues: returnValues }),
        }),
      ),
    );
  }

  /** A META update whose condition failing is an answer, not an error: false when it did. */
  private async updateMetaIf(what: string, ref: SessionRef, parts: ExpressionParts, values: Record<string, unknown>): Promise<boolean> {
    try {
      await this.updateMeta(what, ref, parts, values);
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** One transaction: the conditional META update first, then `others`. */
  private async transactOnMeta(
    what: string,
    ref: SessionRef,
    parts: ExpressionParts & { update: string },
    values: Record<string, unknown>,
    others: TransactItem[],
  ): Promise<void> {
    // One token for every resend of this request: a transaction that went through but answered
    // with an error (a 500, a lost response) is not applied twice when retried (DynamoDB keeps
    // the token for 10 minutes). Without it a retried append would fail its version check, re-read
    // and append the same messages again (I4).
    const clientRequestToken = randomUUID();
    await this.send(what, () =>
      this.doc.send(
        new TransactWriteCommand({
          ClientRequestToken: clientRequestToken,
          TransactItems: [{ Update: { TableName: this.table, Key: metaKey(ref), ...updateExpression(parts, values) } }, ...others],
        }),
      ),
    );
  }

  private readMeta(ref: SessionRef): Promise<MetaItem | undefined> {
    return this.readMetaByKey(metaKey(ref));
  }

  private async readMetaByKey(key: { pk: string; sk: string }): Promise<MetaItem | undefined> {
    const out = await this.send('read session', () =>
      this.doc.send(new GetCommand({ TableName: this.table, Key: { pk: key.pk, sk: key.sk }, ConsistentRead: true })),
    );
    return out.Item as MetaItem | undefined;
  }

  private async requireMeta(ref: SessionRef): Promise<MetaItem> {
    const meta = await this.readMeta(ref);
    if (!meta) throw new SessionNotFoundError(ref.sessionId);
    return meta;
  }

  private async batchGetMetas(keys: { pk: string; sk: string }[]): Promise<MetaItem[]> {
    const found: MetaItem[] = [];
    for (let i = 0; i < keys.length; i += 100) {
      let pending: Record<string, unknown>[] = keys.slice(i, i + 100).map((k) => ({ pk: k.pk, sk: k.sk }));
      for (let round = 0; pending.length > 0; round++) {
        if (round >= 8) throw new StoreRetryableError('batch get: keys left unprocessed');
        if (round > 0) await sleep(backoffDelay(round, this.retry));
        const out = await this.send('batch get', () =>
          this.doc.send(new BatchGetCommand({ RequestItems: { [this.table]: { Keys: pending, ConsistentRead: true } } })),
        );
        found.push(...((out.Responses?.[this.table] ?? []) as MetaItem[]));
        pending = (out.UnprocessedKeys?.[this.table]?.Keys ?? []) as Record<string, unknown>[];
      }
    }
    return found;
  }

  private async queryAll<T>(input: QueryCommandInput): Promise<T[]> {
    const items: T[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.send('query', () => this.doc.send(new QueryCommand({ ...input, ExclusiveStartKey: start })));
      items.push(...((out.Items ?? []) as T[]));
      start = out.LastEvaluatedKey;
    } while (start);
    return items;
  }

  /** Messages of one generation with from <= seq <= to, in order. */
  private readRange(pk: string, generation: number, from: number, to: number): Promise<MessageItem[]> {
    if (to < from) return Promise.resolve([]);
    return this.queryAll<MessageItem>({
      TableName: this.table,
      ConsistentRead: true,
      ...expression(
        { keyCondition: 'pk = :pk AND sk BETWEEN :from AND :to' },
        { ':pk': pk, ':from': messageSk(generation, from), ':to': messageSk(generation, to) },
      ),
    });
  }

  private queryKeysWithPrefix(pk: string, prefix: string): Promise<{ pk: string; sk: string }[]> {
    return this.queryAll<{ pk: string; sk: string }>({
      TableName: this.table,
      ConsistentRead: true,
      ProjectionExpression: 'pk, sk',
      ...expression({ keyCondition: 'pk = :pk AND begins_with(sk, :prefix)' }, { ':pk': pk, ':prefix': prefix }),
    });
  }

  private async putMessages(
    pk: string,
    generation: number,
    firstSeq: number,
    messages: readonly Message[],
    written: { pk: string; sk: string }[],
  ): Promise<void> {
    const items = messages.map((m, i) => toMessageItem(pk, generation, firstSeq + i, m));
    // Recorded before the write so a partial batch is still cleaned up on failure.
    written.push(...items.map((it) => ({ pk: it.pk, sk: it.sk })));
    await putAll(this.doc, this.table, items, this.retry);
  }

  /** Marks every item of a replaced generation with the archive TTL (SPEC C11). Never fails the commit. */
  private async archiveGeneration(pk: string, generation: number): Promise<void> {
    try {
      const items = await this.queryAll<MessageItem>({
        TableName: this.table,
        ConsistentRead: true,
        ...expression({ keyCondition: 'pk = :pk AND begins_with(sk, :prefix)' }, { ':pk': pk, ':prefix': generationPrefix(generation) }),
      });
      const expiresAt = Math.floor(this.now() / 1000) + this.retention;
      await putAll(this.doc, this.table, items.map((it) => ({ ...it, expiresAt })), this.retry);
    } catch (err) {
      this.warn(`archiving generation ${generation} of ${pk} failed; it stays without TTL: ${String(err)}`);
    }
  }

  /** Typed refusal unless `attempt` is still the session's live, newest attempt. */
  private assertCommittable(meta: MetaItem | undefined, ref: SessionRef, attempt: AttemptRecord, mode: CommitMode): MetaItem {
    if (!meta) throw new SessionNotFoundError(ref.sessionId);
    if (meta.childSessionId) {
      throw mode === 'rotate'
        ? new RotationLostError(ref.sessionId, meta.childSessionId)
        : new SessionEndedError(ref.sessionId, meta.childSessionId);
    }
    if (meta.endedAt) throw new SessionEndedError(ref.sessionId, null);
    // Fence moved (L6), or our attempt was abandoned / swept (S1): either way we may not commit.
    if (meta.fence !== undefined && meta.fence !== attempt.fence) throw new FenceStaleError(ref.sessionId, attempt.fence);
    if (meta.attempt?.attemptId !== attempt.attemptId) throw new FenceStaleError(ref.sessionId, attempt.fence);
    return meta;
  }

  /**
   * Decides what a failed commit write means by re-reading the parent: our own commit (response lost),
   * a typed refusal (thrown), or only an append moved the version (returns the new META for another round).
   */
  private async afterFailedCommit(
    err: unknown,
    ref: SessionRef,
    attempt: AttemptRecord,
    mode: CommitMode,
    round: number,
  ): Promise<MetaItem> {
    // A service error that is not a condition failure is definite: the write did not happen.
    if (!isConditionFailure(err) && (isServiceError(err) || err instanceof LineageError)) throw err;
    const meta = await this.readMeta(ref);
    if (meta && isOurCommit(meta, attempt, mode)) return meta;
    this.assertCommittable(meta, ref, attempt, mode);
    if (round + 1 >= MAX_VERSION_ROUNDS) {
      throw new StoreRetryableError(`commit of ${ref.sessionId}: appends kept moving the version`, err);
    }
    return meta as MetaItem;
  }

  private async rotationResult(ref: SessionRef, parent: MetaItem, compactedCount: number): Promise<RotationCommitted> {
    const childRef = { tenantId: ref.tenantId, sessionId: parent.childSessionId as string };
    const child = await this.requireMeta(childRef);
    const messages = (await this.readRange(sessionPk(childRef), 0, 1, child.lastSeq ?? 0)).map(fromMessageItem);
    return {
      parent: toSessionRecord(parent),
      child: toSessionRecord(child),
      messages,
      tailCarried: Math.max(0, messages.length - compactedCount),
    };
  }

  private async inPlaceResult(ref: SessionRef, meta: MetaItem, compactedCount: number): Promise<InPlaceCommitted> {
    const messages = (await this.readRange(sessionPk(ref), meta.generation ?? 0, 1, meta.lastSeq ?? 0)).map(fromMessageItem);
    return { session: toSessionRecord(meta), messages, tailCarried: Math.max(0, messages.length - compactedCount) };
  }

  /** After a failed commit: the parent stays live, our half-written messages go, our attempt is cleared. */
  private async discardAfterFailure(ref: SessionRef, attempt: AttemptRecord, written: { pk: string; sk: string }[]): Promise<void> {
    try {
      await this.clearAttempt(ref, attempt);
      await this.removeLeftovers(ref, attempt);
    } catch (err) {
      // The sweep removes what is left (S1/S2); the caller gets the original error.
      this.warn(`cleanup of attempt ${attempt.attemptId} on ${ref.sessionId} failed (${written.length} items): ${String(err)}`);
    }
  }

  /** Removes the attempt record if it is still this attempt. True when it was. */
  private clearAttempt(ref: SessionRef, attempt: AttemptRecord): Promise<boolean> {
    return this.updateMetaIf('clear attempt', ref, { update: ATTEMPT_ATTRS, condition: '#attempt.attemptId = :aid' }, {
      ':aid': attempt.attemptId,
    });
  }

  /**
   * Deletes what an attempt that can no longer commit wrote: its pending child's messages (only while no
   * child META exists) and its unflipped in-place generation. Safe against a concurrent commit of the same
   * attempt: we only get here once the attempt record is gone or replaced, and commits require it.
   */
  private async removeLeftovers(ref: SessionRef, attempt: AttemptRecord): Promise<number> {
    const meta = await this.readMeta(ref);
    if (meta?.attempt?.attemptId === attempt.attemptId) return 0;
    let removed = 0;
    const childRef = { tenantId: ref.tenantId, sessionId: attempt.pendingChildId };
    if (!(await this.readMeta(childRef))) {
      const keys = await this.queryKeysWithPrefix(sessionPk(childRef), MSG_PREFIX);
      await deleteAll(this.doc, this.table, keys, this.retry);
      removed += keys.length;
    }
    // Fences are unique and always above every generation (nextFence), so a generation numbered by
    // this attempt's fence is its own; unless it is the active one, it is leftover.
    if (meta && attempt.fence !== (meta.generation ?? 0)) {
      const keys = await this.queryKeysWithPrefix(sessionPk(ref), generationPrefix(attempt.fence));
      await deleteAll(this.doc, this.table, keys, this.retry);
      removed += keys.length;
    }
    return removed;
  }
}

/** Commit conditions (C10/C11/L6/C3): live, no child, our fence (or a pre-fencing record), our attempt, unchanged version. */
function commitCondition(meta: MetaItem): string {
  return (
    'attribute_exists(pk) AND attribute_not_exists(#endedAt) AND attribute_not_exists(#childSessionId) ' +
    'AND (#fence = :fence OR attribute_not_exists(#fence)) AND #attempt.attemptId = :aid AND ' +
    versionCondition(meta)
  );
}

/** Records written before versioning have no version: condition on its absence instead. */
function versionCondition(meta: MetaItem): string {
  return meta.version === undefined ? 'attribute_not_exists(#version)' : '#version = :v';
}

function withoutUndefined<T extends object>(item: T): T {
  return Object.fromEntries(Object.entries(item).filter(([, v]) => v !== undefined)) as T;
}

function withoutAttempt(meta: MetaItem): MetaItem {
  const { attempt: _a, attemptShard: _s, leaseExpiresAt: _l, attemptWatermark: _w, ...rest } = meta;
  return rest;
}

/** In-place generations are numbered by fence; a legacy record whose generation is already past it goes one up. */
function inPlaceGeneration(attempt: AttemptRecord, current: number): number {
  return attempt.fence > current ? attempt.fence : current + 1;
}

function isOurCommit(meta: MetaItem, attempt: AttemptRecord, mode: CommitMode): boolean {
  return mode === 'rotate' ? meta.childSessionId === attempt.pendingChildId : isOurInPlaceCommit(meta, attempt);
}

function isOurInPlaceCommit(meta: MetaItem, attempt: AttemptRecord): boolean {
  return meta.generation === attempt.fence && meta.attempt?.attemptId !== attempt.attemptId && !meta.endedAt;
}

function isServiceError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && '$fault' in err;
}

/** [start, end) ranges with at most `maxItems` entries and `maxBytes` total each. */
export function chunkBySize(sizes: readonly number[], maxItems: number, maxBytes: number): [number, number][] {
  const chunks: [number, number][] = [];
  let start = 0;
  let bytes = 0;
  sizes.forEach((size, i) => {
    if (i > start && (i - start >= maxItems || bytes + size > maxBytes)) {
      chunks.push([start, i]);
      start = i;
      bytes = 0;
    }
    bytes += size;
  });
  if (start < sizes.length) chunks.push([start, sizes.length]);
  return chunks;
}
