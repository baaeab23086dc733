// Branches (SPEC H2): a new conversation whose root session holds a copy of a session's items
// 1..n as stored (summaries of earlier compactions included) and records `branchedFrom`. Never a
// rotation child: the root has no parent link (no `parentKey`, no `rotationShard`), so the fork
// audit (S2) and I1 never count it, and the source is never written.
//
// One transaction whenever the copy fits in one (A7's limits): a check that the source is at the
// version its items were read at, the root's record, the conversation's record (put-if-absent:
// 409 conversation_exists), a check that the id is not a chain from before conversations, the
// rows, and the Idempotency-Key record. Beyond one transaction, the rows are written first under
// the new root's key, which nobody reads while it has no record, listed beforehand in a
// `TASK#parts#<w>` that the commit deletes conditionally (the write-first path of appends and
// compactions, parts.ts): the branch lands whole or not at all, and the sweep removes rows of a
// commit that never landed.
import { randomUUID } from 'node:crypto';
import type { SessionRef } from '../../session-ref.js';
import { BranchPointError, ConversationExistsError, type BranchInput, type BranchResult } from '../branches.js';
import { SessionEndedError, SessionNotFoundError, StoreOutcomeUnknownError, StoreRetryableError } from '../errors.js';
import { DEFAULT_IDEMPOTENCY_TTL_SECONDS } from '../limits.js';
import { branchSourceCondition, CONVERSATION_ID_FREE, IDEMPOTENCY_CONDITION, NOT_A_LEGACY_ROOT } from './conditions.js';
import { conversationIdempotencyKey, conversationItemFor, toConversationRecord } from './conversation-row.js';
import { expression } from './expression.js';
import { idempotencyRecord, liveRecord, replay, type IdempotencyRecord } from './idempotency.js';
import { appendIdempotencyKey, metaKey, sessionPk } from './keys.js';
import { liveTipOf } from './links.js';
import { isLiveTip, rowLimit, toSessionRecord, type MetaItem } from './meta-row.js';
import { dropParts, PARTS_GRACE_MS, partsTask, partsTaskCheck } from './parts.js';
import { backoffDelay, rounds, sleep } from './retry.js';
import { packRows, rowItems, type Encoded, type StoredItem } from './rows.js';
import {
  conditionFailedAt,
  oldImageOf,
  oldItemOf,
  TRANSACTION_ENTRIES,
  withoutUndefined,
  type Key,
  type Table,
  type TransactItem,
} from './table.js';

/** Rounds a branch goes again when its source moved between the read and the commit (each round re-reads the items). */
const MAX_ROUNDS = 10;
/** Transaction entries besides the rows: the source check, root, conversation, legacy check, key (or the task's delete). */
const FIXED_ENTRIES = 6;
/** Bytes kept free in the transaction for the records and the key's first response. */
const RECORD_BYTES = 40_000;

/** The transaction entries, by position (a failed condition is told apart by its index). */
const AT_SOURCE = 0;
const AT_CONVERSATION = 2;
const AT_LEGACY = 3;

export class Branches {
  constructor(
    private readonly table: Table,
    private readonly idempotencyTtlSeconds = DEFAULT_IDEMPOTENCY_TTL_SECONDS,
  ) {}

  async branch(input: BranchInput): Promise<BranchResult> {
    const { from, idempotency: idem } = input;
    const pk = sessionPk(from);
    const idemKey =
      idem &&
      (idem.conversation ? conversationIdempotencyKey(from.tenantId, idem.conversation, idem.key) : appendIdempotencyKey(from, idem.key));
    // P5: a container that knows the source's record reads only its items; the transaction's
    // version check refuses a stale one and hands back the current record.
    const cached = this.table.records.get(pk);
    let meta = cached && !cached.deletedAt ? cached : await this.table.getMeta(from);
    let fresh = meta !== cached;
    const newRef: SessionRef = { tenantId: from.tenantId, sessionId: randomUUID() };
    const newPk = sessionPk(newRef);
    for (const round of rounds({ max: MAX_ROUNDS })) {
      if (!meta || meta.deletedAt) throw new SessionNotFoundError(from.sessionId);
      if (input.liveOnly && !isLiveTip(meta)) throw new SessionEndedError(from.sessionId, await liveTipOf(this.table, meta));
      const count = meta.messageCount;
      const n = input.fromSeq ?? count;
      if (n < 0 || n > count || (input.fromSeq !== undefined && n < 1)) {
        // A remembered record may be behind (appends it did not see yet): only DynamoDB's own refuses.
        if (!fresh) {
          meta = await this.table.getMeta(from);
          fresh = true;
          continue;
        }
        throw await this.refusal(new BranchPointError(n, count), idemKey, input);
      }
      const items = n > 0 ? await this.itemsOf(pk, meta, n) : [];
      if (items.length !== n) {
        // Items went between the record's read and ours (a pop, a compaction): read both again.
        meta = await this.table.getMeta(from);
        fresh = true;
        continue;
      }
      const at = this.table.isoNow();
      const sourceConversation = meta.conversationId ?? meta.rootSessionId ?? meta.sessionId;
      const groups = packRows(items.map(encodedOf));
      let rows = rowItems(newPk, 0, 1, groups);
      const root: MetaItem = {
        ...metaKey(newRef),
        ...newRef,
        conversationId: input.conversationId,
        format: meta.format ?? 'chat',
        source: meta.source,
        createdAt: at,
        generation: 0,
        fenceCounter: 0,
        messageCount: n,
        lastSeq: n,
        tokenEstimate: items.reduce((a, it) => a + it.tokens, 0),
        rows: rows.heads.length + rows.parts.length,
        version: 1,
        branchedFrom: { conversationId: sourceConversation, sessionId: meta.sessionId, seq: n },
      };
      const convItem = conversationItemFor(root, input.conversationId);
      const conversation = toConversationRecord(convItem);
      const session = toSessionRecord(root);
      const response = input.respond(conversation, session);
      let w: string | undefined;
      if (
        FIXED_ENTRIES + rows.heads.length + rows.parts.length > TRANSACTION_ENTRIES ||
        rows.bytes + RECORD_BYTES > this.table.transactionBytes
      ) {
        // Beyond one transaction: the rows go first, listed in a task the commit takes away (parts.ts).
        w = randomUUID();
        const keys = [...rows.heads, ...rows.parts].map((r) => r.sk);
        await this.table.putAll([partsTask(this.table, newPk, w, this.table.now() + PARTS_GRACE_MS, keys)]);
        await this.table.putAll([...rows.heads, ...rows.parts]);
        rows = { heads: [], parts: [], bytes: 0 };
      }
      const entries: TransactItem[] = [
        {
          ConditionCheck: {
            TableName: this.table.name,
            Key: metaKey(from),
            ConditionExpression: branchSourceCondition(meta),
            ...expression({ condition: branchSourceCondition(meta) }, { ':v': meta.version }),
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        this.table.put(root, 'attribute_not_exists(pk)'),
        this.table.put(convItem, CONVERSATION_ID_FREE),
        {
          ConditionCheck: {
            TableName: this.table.name,
            Key: metaKey({ tenantId: from.tenantId, sessionId: input.conversationId }),
            ConditionExpression: NOT_A_LEGACY_ROOT,
            ...expression({ condition: NOT_A_LEGACY_ROOT }),
          },
        },
        ...[...rows.heads, ...rows.parts].map((r) => this.table.put(r)),
        ...(w ? [partsTaskCheck(this.table, newPk, w)] : []),
      ];
      if (idem && idemKey) {
        entries.push(
          this.table.put(idempotencyRecord(idemKey, idem, response, this.table.now(), this.idempotencyTtlSeconds), IDEMPOTENCY_CONDITION, {
            ':nowSec': Math.floor(this.table.now() / 1000),
          }),
        );
      }
      try {
        await this.table.transact('branch conversation', entries);
        // P5: the container that made the branch knows its root: its first append is one call.
        this.table.records.set(withoutUndefined(root));
        return { replayed: false, conversation, session };
      } catch (err) {
        if (w && !(err instanceof StoreOutcomeUnknownError)) await dropParts(this.table, newPk, w);
        const idemAt = entries.length - 1;
        if (idem && conditionFailedAt(err, idemAt))
          return { replayed: true, response: replay(oldItemOf<IdempotencyRecord>(err, idemAt)!, idem) };
        if (conditionFailedAt(err, AT_CONVERSATION) || conditionFailedAt(err, AT_LEGACY))
          throw new ConversationExistsError(input.conversationId);
        if (!conditionFailedAt(err, AT_SOURCE)) throw err;
        // The source moved (an append, a pop, a compaction): go again from the record it has now.
        meta = oldImageOf(err, AT_SOURCE);
        fresh = true;
        if (meta) this.table.records.set(meta);
        await sleep(backoffDelay(Math.min(round, 3), { baseDelayMs: 5, maxDelayMs: 100 }));
      }
    }
    throw new StoreRetryableError(`branch of ${from.sessionId}: the session kept changing`);
  }

  /** The session's first `n` items of its active generation, in order (positions, whatever seqs pops skipped). */
  private async itemsOf(pk: string, meta: MetaItem, n: number): Promise<StoredItem[]> {
    const { items } = await this.table.queryRange(pk, meta.generation, 1, meta.lastSeq, { limit: n, rowLimit: (k) => rowLimit(meta, k) });
    return items;
  }

  /** A refusal of a keyed request whose key was used already answers as the key says (A3: replay or 422). */
  private async refusal(err: Error, idemKey: Key | undefined, input: BranchInput): Promise<Error> {
    if (!idemKey || !input.idempotency) return err;
    const seen = liveRecord(await this.table.getItem<IdempotencyRecord>(idemKey), this.table.now());
    if (!seen) return err;
    try {
      replay(seen, input.idempotency);
    } catch (reused) {
      return reused as Error;
    }
    return err;
  }
}

function encodedOf(it: StoredItem): Encoded {
  return { body: it.body, bytes: Buffer.byteLength(it.body, 'utf8'), tokens: it.tokens };
}
