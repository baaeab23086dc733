// History (SPEC H1, H3, H5): every item a conversation ever held, in order, with where it stood
// (session, generation, seq), when it was replaced, and whether a compaction wrote it. Paged by an
// opaque cursor bound to the conversation (or session) it was issued for, like A5's.
import { createHash } from 'node:crypto';
import type { Item, ItemFormat } from '../items/types.js';
import type { ActivityMark, EndReason, IdempotencyInput, StoredResponse } from './types.js';
import { ServiceError } from '../errors.js';
import { InvalidCursorError } from './cursor.js';

/** H3: how long replaced items stay readable. Each at least MIN_RETENTION_SECONDS. */
export interface Retention {
  /** Generations replaced in place (C11's archive), from their replacement. */
  archivedSeconds?: number;
  /** Rotated parents' items, from the rotation; absent: as long as the conversation. */
  endedSessionSeconds?: number;
}

export const MIN_RETENTION_SECONDS = 60;

/** H3: a conversation may not keep replaced items longer than its tenant allows. */
export class RetentionOverLimitError extends ServiceError {
  override readonly name = 'RetentionOverLimitError';
  constructor(field: keyof Retention, asked: number, limit: number) {
    super(`retention.${field}: ${asked} s is over this tenant's limit of ${limit} s (an operator sets it: tenants set-retention)`, {
      status: 400,
      code: 'retention_over_tenant_limit',
      details: { field: `retention.${field}`, limit },
    });
  }
}

/** Throws when `r` asks for longer than the tenant's limits (archived: the tenant's or the default; ended: the tenant's, if set). */
export function assertWithinTenant(r: Retention, tenant: Retention, defaultArchivedSeconds: number): void {
  const archivedLimit = tenant.archivedSeconds ?? defaultArchivedSeconds;
  if (r.archivedSeconds !== undefined && r.archivedSeconds > archivedLimit)
    throw new RetentionOverLimitError('archivedSeconds', r.archivedSeconds, archivedLimit);
  const endedLimit = tenant.endedSessionSeconds;
  if (r.endedSessionSeconds !== undefined && endedLimit !== undefined && r.endedSessionSeconds > endedLimit)
    throw new RetentionOverLimitError('endedSessionSeconds', r.endedSessionSeconds, endedLimit);
}

/** What applies to one conversation: its own setting, bounded by the tenant's (a shortened tenant setting applies at once). */
export function effectiveRetention(
  conversation: Retention,
  tenant: Retention,
  defaultArchivedSeconds: number,
): { archivedSeconds: number; endedSessionSeconds?: number } {
  const tenantArchived = tenant.archivedSeconds ?? defaultArchivedSeconds;
  const archivedSeconds = Math.min(conversation.archivedSeconds ?? tenantArchived, tenantArchived);
  const ended = [conversation.endedSessionSeconds, tenant.endedSessionSeconds].filter((n): n is number => n !== undefined);
  return ended.length > 0 ? { archivedSeconds, endedSessionSeconds: Math.min(...ended) } : { archivedSeconds };
}

export interface HistoryEntry {
  sessionId: string;
  generation: number;
  seq: number;
  /** When this item was replaced: the in-place commit of its generation, or its session's rotation. */
  compactedAt?: string;
  /** A compaction wrote it (its summary, and what the engine kept or restored with it). */
  summary?: true;
  item: Item;
}

export interface HistoryPosition {
  sessionId: string;
  generation: number;
  /** 0: the generation's start (its replacement marker included). */
  afterSeq: number;
}

export interface HistoryRequest {
  limit: number;
  /** Budget for the entries' JSON (a page stops before it would pass it; always at least one entry). */
  maxBytes: number;
  from?: HistoryPosition;
}

export interface HistoryPage {
  entries: HistoryEntry[];
  /** Where the next page starts, or null at the end. A page reads one session: it may hold fewer than `limit`. */
  next: HistoryPosition | null;
}

/**
 * What a history cursor is bound to: a conversation, or the session a twin read asked about. A
 * re-created conversation's root differs: the read refuses a session outside it (history.ts).
 */
export type HistoryScope = { conversationId: string } | { sessionId: string };

function bind(tenantId: string, scope: HistoryScope, sessionId: string): string {
  const s = 'conversationId' in scope ? `c/${scope.conversationId}` : `s/${scope.sessionId}`;
  return createHash('sha256').update(`${tenantId}/${s}/${sessionId}`).digest('base64url').slice(0, 10);
}

export function encodeHistoryCursor(tenantId: string, scope: HistoryScope, at: HistoryPosition): string {
  const body = { v: 1, h: bind(tenantId, scope, at.sessionId), s: at.sessionId, g: at.generation, a: at.afterSeq };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

export function decodeHistoryCursor(tenantId: string, scope: HistoryScope, cursor: string): HistoryPosition {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) throw new InvalidCursorError();
  let c: { v?: unknown; h?: unknown; s?: unknown; g?: unknown; a?: unknown };
  try {
    c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as typeof c;
  } catch {
    throw new InvalidCursorError();
  }
  const whole = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (c?.v !== 1 || typeof c.s !== 'string' || !whole(c.g) || !whole(c.a) || c.h !== bind(tenantId, scope, c.s))
    throw new InvalidCursorError();
  return { sessionId: c.s, generation: c.g, afterSeq: c.a };
}

/** H5: a conversation restored from an export, its ids already mapped to new ones (lib/api/import.ts). */
export interface ImportInput {
  tenantId: string;
  conversationId: string;
  format: ItemFormat;
  source?: string;
  metadata?: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  activeAt: string;
  retention?: Retention;
  turnPolicy?: 'required';
  compactionPolicy?: 'agent';
  /** Root first; each rotated into the next. */
  sessions: ImportSession[];
  idempotency?: IdempotencyInput;
  /** The answer a replay of the key gets. */
  respond: () => StoredResponse;
}

export interface ImportSession {
  sessionId: string;
  createdAt: string;
  endedAt?: string;
  endReason?: EndReason;
  lastActivity?: ActivityMark;
  /** Its generations in order; the last is the one it held when it rotated (or holds, live). */
  generations: ImportGeneration[];
}

export interface ImportGeneration {
  generation: number;
  /** When an in-place compaction replaced it (every generation but the session's last). */
  compactedAt?: string;
  items: { seq: number; summary: boolean; item: Item; tokens: number }[];
}

export type ImportResult = { replayed: false } | { replayed: true; response: StoredResponse };

/** H5: an import's target exists (and no Idempotency-Key names this very import). */
export class ImportTargetExistsError extends ServiceError {
  override readonly name = 'ImportTargetExistsError';
  constructor(conversationId: string) {
    super(`conversation ${conversationId} already exists: an import restores into a new conversation id`, {
      status: 409,
      code: 'conflict',
    });
  }
}
