// Item shapes stored in the table and their conversion to the store's records.
import type { Message } from '../messages.js';
import { MessageTooLargeError } from './errors.js';
import { messageSk } from './keys.js';
import type { SessionRecord } from './types.js';

/** Counters the record always has but META items written by older code may lack (SPEC C3). */
type LegacyOptional = 'generation' | 'messageCount' | 'lastSeq';

/**
 * The session META item: the session's record plus the keys and bookkeeping only the store reads.
 * Optional fields may be absent on records written by older code (SPEC C3).
 */
export interface MetaItem extends Omit<SessionRecord, LegacyOptional>, Partial<Pick<SessionRecord, LegacyOptional>> {
  pk: string;
  sk: string;
  /** Sparse GSI `childrenByParent`: the parent's pk, only on children. */
  parentKey?: string;
  /** Attempt that created this child (idempotent commit detection). */
  createdByAttempt?: string;
  fenceCounter?: number;
  /** lastSeq when the attempt began: later messages are the concurrent tail (SPEC I4). */
  attemptWatermark?: number;
  /** Sparse GSI `attemptsByExpiry`, present only while an attempt is in flight. */
  attemptShard?: string;
  leaseExpiresAt?: number;
  /** Optimistic-concurrency counter bumped by appends, begin and commits. */
  version?: number;
}

export interface MessageItem {
  pk: string;
  sk: string;
  generation: number;
  seq: number;
  /** The message as JSON, so every client field round-trips verbatim. */
  body: string;
  /** TTL (epoch seconds) once the generation is archived (SPEC C11). */
  expiresAt?: number;
}

export function toSessionRecord(item: MetaItem): SessionRecord {
  const r: SessionRecord = {
    tenantId: item.tenantId,
    sessionId: item.sessionId,
    createdAt: item.createdAt,
    generation: item.generation ?? 0,
    messageCount: item.messageCount ?? 0,
    lastSeq: item.lastSeq ?? 0,
  };
  if (item.source !== undefined) r.source = item.source;
  if (item.metadata !== undefined) r.metadata = item.metadata;
  if (item.parentSessionId !== undefined) r.parentSessionId = item.parentSessionId;
  if (item.childSessionId !== undefined) r.childSessionId = item.childSessionId;
  if (item.endedAt !== undefined) r.endedAt = item.endedAt;
  if (item.endReason !== undefined) r.endReason = item.endReason;
  if (item.fence !== undefined) r.fence = item.fence;
  if (item.lastActivity !== undefined) r.lastActivity = item.lastActivity;
  if (item.attempt !== undefined) r.attempt = item.attempt;
  return r;
}

export function toMessageItem(pk: string, generation: number, seq: number, message: Message): MessageItem {
  return { pk, sk: messageSk(generation, seq), generation, seq, body: JSON.stringify(message) };
}

export function fromMessageItem(item: MessageItem): Message {
  return JSON.parse(item.body) as Message;
}

/** DynamoDB's item size: attribute name bytes + value bytes (numbers: up to 21 bytes). */
export function itemSizeBytes(item: Record<string, unknown>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) {
    if (value === undefined) continue;
    size += Buffer.byteLength(name, 'utf8') + valueSize(value);
  }
  return size;
}

function valueSize(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (typeof value === 'number') return 21;
  if (typeof value === 'boolean' || value === null) return 1;
  if (Array.isArray(value)) return 3 + value.reduce<number>((s, v) => s + 1 + valueSize(v), 0);
  if (typeof value === 'object') return 3 + itemSizeBytes(value as Record<string, unknown>) + Object.keys(value).length;
  return 0;
}

/** 400 KB item limit minus headroom for the archive TTL attribute and key growth. */
export const MAX_MESSAGE_ITEM_BYTES = 380_000;

/** Measures every message as the item it would become; one too large refuses the whole call. */
export function assertMessagesFit(pk: string, generation: number, firstSeq: number, messages: readonly Message[]): number[] {
  return messages.map((m, i) => {
    const bytes = itemSizeBytes({ ...toMessageItem(pk, generation, firstSeq + i, m), expiresAt: 0 });
    if (bytes > MAX_MESSAGE_ITEM_BYTES) throw new MessageTooLargeError(i, bytes, MAX_MESSAGE_ITEM_BYTES);
    return bytes;
  });
}
