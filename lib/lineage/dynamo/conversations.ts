// Conversations (SPEC K1-K3): one CONV record per tenant + id naming the chain's root and its live
// tip (conversation-row.ts). Creation writes the root session and the record in one
// transaction (sessions.ts), the rotation commit moves the tip (commit.ts), and a delete removes
// the record together with the live session's tombstone, so a conversation is whole or gone.
import { randomUUID } from 'node:crypto';
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SessionRef } from '../../session-ref.js';
import { InvalidCursorError } from '../cursor.js';
import { ConversationNotFoundError, FormatMismatchError, SessionIdNotConversationError, StoreRetryableError } from '../errors.js';
import type {
  ConversationPage,
  ConversationRecord,
  ConversationScope,
  CreateConversationInput,
  EnsureConversationResult,
} from '../types.js';
import {
  conversationKey,
  CONVERSATIONS_INDEX,
  ConversationTakenError,
  conversationItemFor,
  listingPartition,
  toConversationRecord,
  type ConversationItem,
} from './conversation-row.js';
import { expression } from './expression.js';
import { isLiveTip, type MetaItem } from './meta-row.js';
import { chainOf } from './links.js';
import { isConditionFailure, rounds } from './retry.js';
import { purgeTaskItem, tombstoneEntries, type Sessions } from './sessions.js';
import type { Table, TransactItem } from './table.js';
import { EXISTS, LIVE } from './conditions.js';

/** Rounds a create or delete goes again after losing a race (a delete between reads, a rotation). */
const MAX_ROUNDS = 8;
/** Sessions tombstoned per transaction: two entries each, below the 100-entry limit with the CONV delete. */
const SESSIONS_PER_TX = 49;

/** What a conversation's delete removed: the record as it was, and the sessions it tombstoned. */
export interface DeletedConversation {
  conversation: ConversationRecord;
  tombstoned: MetaItem[];
}

export class Conversations {
  constructor(
    private readonly table: Table,
    private readonly sessions: Sessions,
  ) {}

  async get(tenantId: string, conversationId: string): Promise<ConversationRecord | null> {
    return (await this.lookup(tenantId, conversationId)).conversation;
  }

  /** The conversation's record (a legacy chain's is written here); without one, the session of that id, if any. */
  private async lookup(tenantId: string, conversationId: string): Promise<{ conversation: ConversationRecord | null; session?: MetaItem }> {
    const item = await this.table.getItem<ConversationItem>(conversationKey(tenantId, conversationId));
    return item ? { conversation: toConversationRecord(item) } : this.adoptLegacyChain(tenantId, conversationId);
  }

  /**
   * K1 for chains made before conversations existed: a chain created with POST /sessions is the
   * conversation named by its root session's id, but has no CONV record. It is written on first
   * use, in one transaction with the conversation id on the live tip (so the tip's rotation moves
   * the record, K2), conditioned on that tip still being live and the record still absent; a
   * rotation or another adopter in between sends us round again. No conversation when the id names
   * no such root (or its chain has no live session left); then `session` is the session of that id, if any.
   */
  private async adoptLegacyChain(
    tenantId: string,
    conversationId: string,
  ): Promise<{ conversation: ConversationRecord | null; session?: MetaItem }> {
    const key = conversationKey(tenantId, conversationId);
    for (const _round of rounds({ max: MAX_ROUNDS })) {
      const root = await this.table.getMeta({ tenantId, sessionId: conversationId });
      // A root made since conversations names its own (a deleted conversation leaves it so): not legacy.
      if (!root) return { conversation: null };
      if (root.conversationId !== undefined || root.parentSessionId !== undefined || root.deletedAt)
        return { conversation: null, session: root };
      const chain = await chainOf(this.table, { tenantId, sessionId: root.sessionId });
      const tip = chain[chain.length - 1]!;
      // A tip of another conversation is never re-labelled (the condition below says so too); one
      // that names this id was adopted meanwhile: the transaction fails and the record is read.
      const elsewhere = tip.conversationId !== undefined && tip.conversationId !== conversationId;
      if (!isLiveTip(tip) || elsewhere) return { conversation: null, session: root };
      const at = this.table.isoNow();
      const item: ConversationItem = {
        ...conversationItemFor(root, conversationId),
        liveSessionId: tip.sessionId,
        sessions: chain.length,
        updatedAt: at,
        activeAt: at,
      };
      try {
        await this.table.transact('adopt conversation', [
          this.table.put(item, 'attribute_not_exists(pk)'),
          this.table.metaUpdate(
            { tenantId, sessionId: tip.sessionId },
            {
              // K2: the version moves, so an attempt begun before this (its image without the
              // conversation) cannot commit a rotation that leaves the record on the ended parent.
              update: 'SET #conversationId = :c ADD #version :one',
              condition: `${LIVE} AND attribute_not_exists(#conversationId)`,
            },
            { ':c': conversationId, ':one': 1 },
          ),
        ]);
        return { conversation: toConversationRecord(item) };
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
        const now = await this.table.getItem<ConversationItem>(key);
        if (now) return { conversation: toConversationRecord(now) };
      }
    }
    throw new StoreRetryableError(`conversation ${conversationId}: its chain kept changing while its record was written`);
  }

  async ensure(input: CreateConversationInput, explicitFormat: boolean): Promise<EnsureConversationResult> {
    const { tenantId, conversationId } = input;
    const existing = (found: ConversationRecord): EnsureConversationResult => {
      if (explicitFormat && input.format !== undefined && found.format !== input.format) {
        throw new FormatMismatchError(conversationId, found.format, input.format);
      }
      return { created: false, conversation: found };
    };
    for (const _round of rounds({ max: MAX_ROUNDS })) {
      const { conversation: found, session } = await this.lookup(tenantId, conversationId);
      if (found) return existing(found);
      if (
        session &&
        !session.deletedAt &&
        (session.parentSessionId !== undefined || (session.conversationId ?? conversationId) !== conversationId)
      ) {
        throw new SessionIdNotConversationError(conversationId, await this.conversationOf(session));
      }
      try {
        const r = await this.sessions.create({
          tenantId,
          sessionId: randomUUID(),
          conversationId,
          ...(input.format !== undefined ? { format: input.format } : {}),
          ...(input.source !== undefined ? { source: input.source } : {}),
          ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
        });
        if (r.replayed) throw new Error('a create without an Idempotency-Key cannot replay');
        const s = r.session;
        return {
          created: true,
          conversation: {
            tenantId,
            conversationId,
            format: s.format,
            ...(s.source !== undefined ? { source: s.source } : {}),
            ...(s.metadata !== undefined ? { metadata: s.metadata } : {}),
            rootSessionId: s.sessionId,
            liveSessionId: s.sessionId,
            sessions: 1,
            createdAt: s.createdAt,
            updatedAt: s.createdAt,
            activeAt: s.createdAt,
          },
        };
      } catch (err) {
        // A concurrent create won (K1: exactly one); read it, unless a delete took it again meanwhile.
        if (!(err instanceof ConversationTakenError)) throw err;
      }
    }
    throw new StoreRetryableError(`create conversation ${conversationId}: it kept being created and deleted`);
  }

  /** The conversation a session belongs to: its own record's, else (a chain from before conversations) its root's id. */
  private async conversationOf(session: MetaItem): Promise<string> {
    if (session.conversationId !== undefined) return session.conversationId;
    if (session.rootSessionId !== undefined) return session.rootSessionId;
    const chain = await chainOf(this.table, { tenantId: session.tenantId, sessionId: session.sessionId });
    return chain[0]!.sessionId;
  }

  async list(tenantId: string, limit: number, cursor?: string): Promise<ConversationPage> {
    const start = cursor === undefined ? undefined : decodeListCursor(tenantId, cursor);
    const out = await this.table.send('list conversations', () =>
      this.table.doc.send(
        new QueryCommand({
          TableName: this.table.name,
          IndexName: CONVERSATIONS_INDEX,
          ...expression({ keyCondition: '#convTenant = :t' }, { ':t': listingPartition(tenantId) }),
          ScanIndexForward: false,
          Limit: limit,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      ),
    );
    const items = (out.Items ?? []) as ConversationItem[];
    const last = out.LastEvaluatedKey as ListKey | undefined;
    return {
      conversations: items.map(toConversationRecord),
      next: last ? encodeListCursor(last) : null,
    };
  }

  async updateMetadata(tenantId: string, conversationId: string, metadata: Record<string, unknown>): Promise<ConversationRecord> {
    const at = this.table.isoNow();
    try {
      const out = await this.table.send('update conversation', () =>
        this.table.doc.send(
          new UpdateCommand({
            TableName: this.table.name,
            Key: conversationKey(tenantId, conversationId),
            ...expression(
              { update: 'SET #metadataJson = :m, #updatedAt = :at, #activeAt = :at', condition: EXISTS },
              { ':m': JSON.stringify(metadata), ':at': at },
            ),
            ReturnValues: 'ALL_NEW',
          }),
        ),
      );
      return toConversationRecord(out.Attributes as ConversationItem);
    } catch (err) {
      if (isConditionFailure(err)) throw new ConversationNotFoundError(conversationId);
      throw err;
    }
  }

  /** Moves `activeAt` forward (listing order); a missing conversation or a failed write changes nothing. */
  async touch(tenantId: string, conversationId: string): Promise<void> {
    const at = this.table.isoNow();
    try {
      await this.table.doc.send(
        new UpdateCommand({
          TableName: this.table.name,
          Key: conversationKey(tenantId, conversationId),
          ...expression({ update: 'SET #activeAt = :at', condition: `${EXISTS} AND #activeAt < :at` }, { ':at': at }),
        }),
      );
    } catch (err) {
      if (!isConditionFailure(err)) this.table.warn('conversation activity mark failed', err, { conversationId });
    }
  }

  /**
   * K3: every session of the chain is tombstoned and the record removed. The last transaction holds
   * the record's delete, conditioned on its live tip being the one we read (a rotation in between
   * sends us round again), and the newest sessions' tombstones, the live one included: after it
   * nothing can append to, rotate or re-create any of them, and a concurrent PUT either saw the whole
   * conversation before it or creates a new one after it. Older (ended, immutable) sessions of a very
   * long chain are tombstoned first, in transactions of their own: a delete that fails after them
   * answers retryable and its retry finishes (the chain is walked through tombstones).
   *
   * The conversation is found as GET finds it (a legacy chain is adopted first, K1), and its chain
   * is walked from the live tip through tombstones, so sessions the client deleted one by one hide
   * none of the rest. `onlyWithLive`: delete only while that session is the live one (null if not),
   * for a delete of the live session (K3).
   */
  async delete(tenantId: string, conversationId: string, onlyWithLive?: string): Promise<DeletedConversation | null> {
    const key = conversationKey(tenantId, conversationId);
    let started = false;
    for (const _round of rounds({ max: MAX_ROUNDS })) {
      const { conversation: conv } = await this.lookup(tenantId, conversationId);
      if (!conv) throw new ConversationNotFoundError(conversationId);
      if (onlyWithLive !== undefined && conv.liveSessionId !== onlyWithLive && !started) return null;
      const chain = await chainOf(this.table, { tenantId, sessionId: conv.liveSessionId }, { fromTombstone: true });
      const alive = chain.filter((m) => !m.deletedAt);
      // H4: nothing of the conversation stays, so each purge erases its session's record too.
      const erase = { conversationId: conv.conversationId, rootSessionId: conv.rootSessionId };
      const older = alive.slice(0, Math.max(0, alive.length - SESSIONS_PER_TX));
      const newest = alive.slice(older.length);
      for (let i = 0; i < older.length; i += SESSIONS_PER_TX) {
        started = true;
        await this.tombstoneIgnoringDone(older.slice(i, i + SESSIONS_PER_TX), erase);
      }
      const entries: TransactItem[] = [
        {
          Delete: {
            TableName: this.table.name,
            Key: key,
            ...expression({ condition: `${EXISTS} AND #liveSessionId = :live` }, { ':live': conv.liveSessionId }),
          },
        },
        ...newest.flatMap((m) => tombstoneEntries(this.table, m, erase)),
      ];
      try {
        await this.table.transact('delete conversation', entries);
        // H4: sessions the client deleted one by one before kept their tombstones for their
        // relatives; with the conversation gone they are erased as well.
        const earlier = chain.filter((m) => m.deletedAt);
        await this.table.putAll(earlier.map((m) => purgeTaskItem(this.table, m, erase)));
        return { conversation: conv, tombstoned: [...alive, ...earlier] };
      } catch (err) {
        // The tip moved (a rotation committed), or a session was deleted meanwhile: read again.
        if (!isConditionFailure(err)) throw err;
      }
    }
    throw new StoreRetryableError(`delete conversation ${conversationId}: the chain kept changing`);
  }

  /**
   * A6 with K3: a session's delete. The live session of a conversation takes its conversation
   * with it (every session of the chain and the record), so the id is free again and no route is
   * left naming a deleted session; any other session goes alone, as a tombstone whose links stay
   * for its relatives. Returns what was deleted.
   */
  async deleteSession(ref: SessionRef): Promise<DeletedConversation | { conversation?: undefined; tombstoned: MetaItem[] }> {
    const meta = await this.table.requireMeta(ref);
    if (meta.conversationId !== undefined && isLiveTip(meta)) {
      const gone = await this.delete(ref.tenantId, meta.conversationId, ref.sessionId).catch((err: unknown) => {
        if (err instanceof ConversationNotFoundError) return null;
        throw err;
      });
      if (gone) return gone;
    }
    await this.sessions.delete(ref, meta);
    return { tombstoned: [meta] };
  }

  private async tombstoneIgnoringDone(metas: MetaItem[], erase: ConversationScope): Promise<void> {
    try {
      await this.table.transact(
        'delete conversation sessions',
        metas.flatMap((m) => tombstoneEntries(this.table, m, erase)),
      );
    } catch (err) {
      // One was deleted meanwhile: the rest one by one, a deleted one being done already.
      if (!isConditionFailure(err)) throw err;
      for (const m of metas) {
        await this.table.transact('delete session', tombstoneEntries(this.table, m, erase)).catch((e: unknown) => {
          if (!isConditionFailure(e)) throw e;
        });
      }
    }
  }
}

interface ListKey {
  pk: string;
  sk: string;
  convTenant: string;
  activeAt: string;
}

function encodeListCursor(k: ListKey): string {
  return Buffer.from(JSON.stringify({ v: 1, p: k.pk, a: k.activeAt })).toString('base64url');
}

function decodeListCursor(tenantId: string, cursor: string): ListKey {
  const bad = () => new InvalidCursorError();
  if (!/^[A-Za-z0-9_-]{1,600}$/.test(cursor)) throw bad();
  let c: { v?: unknown; p?: unknown; a?: unknown };
  try {
    c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as typeof c;
  } catch {
    throw bad();
  }
  const prefix = `T#${tenantId}#C#`;
  if (c?.v !== 1 || typeof c.p !== 'string' || !c.p.startsWith(prefix) || typeof c.a !== 'string') throw bad();
  return { pk: c.p, sk: 'CONV', convTenant: listingPartition(tenantId), activeAt: c.a };
}
