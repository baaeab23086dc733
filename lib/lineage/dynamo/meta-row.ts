// The session record row (META) as stored in the table, and its conversion to the store's SessionRecord.
import type { ItemFormat } from '../../items/types.js';
import type { BranchedFrom } from '../branches.js';
import type { ActivityMark, AttemptRecord, EndReason, SessionRecord } from '../types.js';

/** A short write barrier an attempt puts up when appends keep outrunning its commit (lib/lineage/dynamo/commit.ts). */
export interface Seal {
  attemptId: string;
  /** Epoch ms; an expired seal is ignored by everyone. */
  until: number;
}

/**
 * An append's priority (A4 fairness; not a conversation turn, SPEC T): an append that kept losing version races to other appends takes it, and
 * until it lands (or `until` passes) only it may append (lib/lineage/dynamo/append-priority.ts).
 */
export interface AppendPriority {
  id: string;
  /** Epoch ms; an expired mark is ignored by everyone. */
  until: number;
}

/** A conversation turn as the record stores it (SPEC T); the token only as its hash. */
export interface StoredTurn {
  turnId: string;
  tokenHash: string;
  /** Epoch ms. */
  startedAt: number;
  expiresAt: number;
  /** Set on prevTurn by an end (DELETE .../turns/{turnId}). */
  ended?: boolean;
}

export interface TurnWaiter {
  id: string;
  /** Epoch ms: the waiter's own deadline. */
  until: number;
}

/**
 * The session META item. Fields marked "legacy" may be absent on records written by older code
 * (SPEC C3); readMeta fills their defaults once, so nothing else has to.
 */
export interface MetaItem {
  pk: string;
  sk: string;
  tenantId: string;
  sessionId: string;
  /** K1: the chain's conversation (its CONV record, conversations.ts); legacy records have none. */
  conversationId?: string;
  /** legacy: absent means chat. */
  format?: ItemFormat;
  source?: string;
  /** The client's metadata as JSON text: DynamoDB's number and nesting limits never apply to it. */
  metadataJson?: string;
  /** legacy: metadata stored as a map by older code. */
  metadata?: Record<string, unknown>;
  createdAt: string;
  parentSessionId?: string;
  childSessionId?: string;
  rootSessionId?: string;
  /** The newest descendant this record knows of; kept on the root and on each rotated parent (F1, C4). */
  tipSessionId?: string;
  endedAt?: string;
  endReason?: EndReason;
  /** A6: a deleted session answers as not found; the record stays so relatives' links resolve. */
  deletedAt?: string;
  fence?: number;
  fenceCounter?: number;
  generation: number;
  messageCount: number;
  /** P6: the last partial commit replaced items up to this seq of the generation (a turn rollback past it is refused, T2). */
  partialThrough?: number;
  /** The attempt whose partial commit that was (a lost answer is recognised by it). */
  partialBy?: string;
  lastSeq: number;
  tokenEstimate: number;
  lastActivity?: ActivityMark;
  /**
   * The in-flight attempt as callers see it. Stored as a map without `fence` and `watermark`, which
   * live at the top level (`fence`, `attemptWatermark`) because beginAttempt's one update computes
   * them in DynamoDB; withDefaults puts them together.
   */
  attempt?: AttemptRecord & { stale?: boolean };
  attemptWatermark?: number;
  /** Sparse GSI attemptsByExpiry: present only while an attempt is in flight. */
  attemptShard?: string;
  leaseExpiresAt?: number;
  seal?: Seal;
  appendPriority?: AppendPriority;
  /** SPEC T: the conversation's current turn and its bookkeeping (turn-row.ts). Copied to a rotation's child (T4). */
  activeTurn?: StoredTurn;
  /** The turn a begin or an end replaced last: tells a refused write why (superseded, ended, expired). */
  prevTurn?: StoredTurn;
  /** Turn fence: bumped by every grant, so the current turn's fence is this value. */
  turnFence?: number;
  /** lastSeq when the current turn began (rollback removes what came after), and the generation then. */
  turnFrom?: number;
  turnGen?: number;
  /** Items the current turn appended (rollback is unavailable once a compaction may have summarized one). */
  turnAppended?: number;
  /** Bumped by every change of the turn state: enqueue grants and rotations condition on it. */
  turnSeq?: number;
  /** Enqueued begins in arrival order; an entry past its `until` gave up (or died) and is skipped. */
  turnQueue?: TurnWaiter[];
  /** T5: 'required' refuses writes without a turn token. */
  turnPolicy?: 'required';
  /** E6: 'agent' refuses the service engine's begin (conditions.ts SERVICE_ENGINE_ALLOWED); absent: service. Copied to a rotation's child. */
  compactionPolicy?: 'agent';
  /**
   * Rows (heads and inline parts) of the active generation: reads size their Query's Limit by it
   * (rows.ts). Absent on records older than packed rows, whose rows hold one item each.
   */
  rows?: number;
  /** Optimistic-concurrency counter: appends, pops, begins, commits and deletes bump it. */
  version: number;
  /** Sparse GSI childrenByParent: the parent's pk, only on children. */
  parentKey?: string;
  /** Sparse GSI rotationsByTime (fork audit): only on children. */
  rotationShard?: string;
  /** Attempt that created this child (idempotent commit detection). */
  createdByAttempt?: string;
  /** H2: on a branch's root only: the conversation, session and item it was branched from (never a rotation link). */
  branchedFrom?: BranchedFrom;
  /** H4: the pk of the create's Idempotency-Key record (POST /sessions with a key), so the purge finds it. */
  createKeyPk?: string;
}

/** A META item as stored, before defaults: what older code may have written. */
export type StoredMeta = Omit<MetaItem, 'generation' | 'messageCount' | 'lastSeq' | 'tokenEstimate' | 'version'> &
  Partial<Pick<MetaItem, 'generation' | 'messageCount' | 'lastSeq' | 'tokenEstimate' | 'version'>>;

/** The attempt map as stored: fence and watermark are top-level attributes (older records kept the fence inside). */
export type StoredAttempt = Omit<AttemptRecord, 'fence' | 'watermark'> &
  Partial<Pick<AttemptRecord, 'fence' | 'watermark'>> & { stale?: boolean };

/** Fills the defaults of fields older records lack (C3) and assembles the attempt: the one place that knows them. */
export function withDefaults(stored: StoredMeta): MetaItem {
  const meta: MetaItem = {
    ...stored,
    generation: stored.generation ?? 0,
    messageCount: stored.messageCount ?? 0,
    lastSeq: stored.lastSeq ?? 0,
    tokenEstimate: stored.tokenEstimate ?? 0,
    version: stored.version ?? 0,
  };
  const raw = stored.attempt as StoredAttempt | undefined;
  if (raw) meta.attempt = { ...raw, fence: raw.fence ?? stored.fence ?? 0, watermark: raw.watermark ?? stored.attemptWatermark ?? 0 };
  return meta;
}

export function metadataOf(item: Pick<MetaItem, 'metadataJson' | 'metadata'>): Record<string, unknown> | undefined {
  if (item.metadataJson !== undefined) return JSON.parse(item.metadataJson) as Record<string, unknown>;
  return item.metadata;
}

/** Rows a read of `items` items of this session should ask DynamoDB for (one extra for a row boundary). */
export function rowLimit(meta: Pick<MetaItem, 'rows' | 'messageCount'>, items: number): number {
  const perItem = meta.rows !== undefined && meta.messageCount > 0 ? Math.max(meta.rows, 1) / meta.messageCount : 1;
  return Math.ceil(items * perItem) + 1;
}

export function toSessionRecord(item: MetaItem): SessionRecord {
  const r: SessionRecord = {
    tenantId: item.tenantId,
    sessionId: item.sessionId,
    format: item.format ?? 'chat',
    createdAt: item.createdAt,
    generation: item.generation,
    messageCount: item.messageCount,
    lastSeq: item.lastSeq,
    tokenEstimate: item.tokenEstimate,
  };
  const metadata = metadataOf(item);
  if (item.conversationId !== undefined) r.conversationId = item.conversationId;
  if (item.source !== undefined) r.source = item.source;
  if (metadata !== undefined) r.metadata = metadata;
  if (item.parentSessionId !== undefined) r.parentSessionId = item.parentSessionId;
  if (item.childSessionId !== undefined) r.childSessionId = item.childSessionId;
  if (item.rootSessionId !== undefined) r.rootSessionId = item.rootSessionId;
  if (item.endedAt !== undefined) r.endedAt = item.endedAt;
  if (item.endReason !== undefined) r.endReason = item.endReason;
  if (item.deletedAt !== undefined) r.deletedAt = item.deletedAt;
  if (item.fence !== undefined) r.fence = item.fence;
  if (item.turnPolicy !== undefined) r.turnPolicy = item.turnPolicy;
  if (item.compactionPolicy !== undefined) r.compactionPolicy = item.compactionPolicy;
  if (item.branchedFrom !== undefined) r.branchedFrom = item.branchedFrom;
  if (item.lastActivity !== undefined) r.lastActivity = item.lastActivity;
  if (item.attempt !== undefined) {
    const { stale: _stale, ...attempt } = item.attempt;
    r.attempt = attempt;
  }
  return r;
}

/** The record is its chain's live tip: not ended, not rotated, not deleted (the LIVE condition, read in TypeScript). */
export function isLiveTip(meta: MetaItem): boolean {
  return !meta.endedAt && !meta.childSessionId && !meta.deletedAt;
}
