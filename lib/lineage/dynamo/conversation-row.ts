// The CONV record of a conversation (SPEC K1-K3) and the transaction entries other parts of the
// store add for it. Kept apart from conversations.ts so sessions.ts and commit.ts can use these
// without an import cycle.
//
// Layout: `T#<tenant>#C#<conversationId>` / `CONV`, one per tenant + id (ids never contain '#').
// Idempotency-Key records of the conversation routes live under the same pk at
// `IDEM#<rootSessionId>#<sha256(key)>`: scoped to one incarnation of the conversation (a deleted and
// re-created id starts afresh), and not to a session, so a keyed retry that arrives after a
// rotation finds its first try (K2). The sparse GSI `conversationsByActivity` (hash `convTenant`,
// range `activeAt`) lists a tenant's conversations by recent activity.
import { createHash } from 'node:crypto';
import type { ItemFormat } from '../../items/types.js';
import { LineageError } from '../errors.js';
import type { BranchedFrom } from '../branches.js';
import type { ConversationRecord, ConversationScope } from '../types.js';
import { metadataOf, type MetaItem } from './meta-row.js';
import type { Key, Table, TransactItem } from './table.js';
import { TIP_IS_PARENT } from './conditions.js';

export const CONV_SK = 'CONV';
export const CONVERSATIONS_INDEX = 'conversationsByActivity';

export interface ConversationItem {
  pk: string;
  sk: string;
  tenantId: string;
  conversationId: string;
  format: ItemFormat;
  source?: string;
  metadataJson?: string;
  rootSessionId: string;
  liveSessionId: string;
  sessions: number;
  createdAt: string;
  updatedAt: string;
  /** GSI conversationsByActivity: the tenant's partition of the listing, and its order. */
  convTenant: string;
  activeAt: string;
  /** H2: a branch's edge, as on its root session's record. */
  branchedFrom?: BranchedFrom;
  /** H3: this conversation's retention (retention.ts), bounded by the tenant's. */
  archivedSeconds?: number;
  endedSessionSeconds?: number;
}

/** The conversation id a create asked for is taken (the caller decides what that means). */
export class ConversationTakenError extends LineageError {
  override readonly name = 'ConversationTakenError';
  constructor(readonly conversationId: string) {
    super(`conversation ${conversationId} already exists`);
  }
}

export function conversationKey(tenantId: string, conversationId: string): Key {
  return { pk: `T#${tenantId}#C#${conversationId}`, sk: CONV_SK };
}

export function listingPartition(tenantId: string): string {
  return `T#${tenantId}`;
}

export function conversationIdempotencyKey(tenantId: string, scope: ConversationScope, key: string): Key {
  const digest = createHash('sha256').update(key, 'utf8').digest('hex');
  return { pk: conversationKey(tenantId, scope.conversationId).pk, sk: `${conversationIdempotencyPrefix(scope)}${digest}` };
}

/** The sort-key prefix of one incarnation's Idempotency-Key records (a delete removes them, K3). */
export function conversationIdempotencyPrefix(scope: ConversationScope): string {
  return `IDEM#${scope.rootSessionId}#`;
}

/** The CONV record of a chain whose root is `root` (created with it, in the same transaction). */
export function conversationItemFor(root: MetaItem, conversationId: string): ConversationItem {
  const item: ConversationItem = {
    ...conversationKey(root.tenantId, conversationId),
    tenantId: root.tenantId,
    conversationId,
    format: root.format ?? 'chat',
    rootSessionId: root.sessionId,
    liveSessionId: root.sessionId,
    sessions: 1,
    createdAt: root.createdAt,
    updatedAt: root.createdAt,
    convTenant: listingPartition(root.tenantId),
    activeAt: root.createdAt,
  };
  if (root.source !== undefined) item.source = root.source;
  if (root.metadataJson !== undefined) item.metadataJson = root.metadataJson;
  if (root.branchedFrom !== undefined) item.branchedFrom = root.branchedFrom;
  return item;
}

export function toConversationRecord(item: ConversationItem): ConversationRecord {
  const r: ConversationRecord = {
    tenantId: item.tenantId,
    conversationId: item.conversationId,
    format: item.format,
    rootSessionId: item.rootSessionId,
    liveSessionId: item.liveSessionId,
    sessions: item.sessions,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    activeAt: item.activeAt,
  };
  const metadata = metadataOf(item);
  if (metadata !== undefined) r.metadata = metadata;
  if (item.source !== undefined) r.source = item.source;
  if (item.branchedFrom !== undefined) r.branchedFrom = item.branchedFrom;
  if (item.archivedSeconds !== undefined || item.endedSessionSeconds !== undefined) {
    r.retention = {
      ...(item.archivedSeconds !== undefined ? { archivedSeconds: item.archivedSeconds } : {}),
      ...(item.endedSessionSeconds !== undefined ? { endedSessionSeconds: item.endedSessionSeconds } : {}),
    };
  }
  return r;
}

/**
 * K2: the rotation commit's entry that moves the conversation's live tip from the parent to the
 * child, conditioned on it still naming the parent. Null for a chain from before conversations.
 */
export function tipMoveEntry(table: Table, parent: MetaItem, childSessionId: string, at: string): TransactItem | null {
  if (parent.conversationId === undefined) return null;
  return {
    Update: {
      TableName: table.name,
      Key: conversationKey(parent.tenantId, parent.conversationId),
      UpdateExpression: 'SET #live = :child, #updatedAt = :at, #activeAt = :at ADD #sessions :one',
      ConditionExpression: TIP_IS_PARENT,
      ExpressionAttributeNames: { '#live': 'liveSessionId', '#updatedAt': 'updatedAt', '#activeAt': 'activeAt', '#sessions': 'sessions' },
      ExpressionAttributeValues: { ':child': childSessionId, ':parent': parent.sessionId, ':at': at, ':one': 1 },
    },
  };
}
