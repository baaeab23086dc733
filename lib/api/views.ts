// What the API shows of store records: stable field names, nulls instead of absent lineage
// links, and no internals (fences, attempts, versions).
import type { CompactionOutcome } from '../compaction/types.js';
import type { ItemFormat } from '../items/types.js';
import { MAX_PAGE_BYTES } from '../lineage/limits.js';
import type { BranchedFrom } from '../lineage/branches.js';
import type { CompactionPolicy, ConversationRecord, SessionRecord } from '../lineage/types.js';

export interface SessionView {
  sessionId: string;
  /** K1: the conversation the session belongs to (null on sessions from before conversations). */
  conversationId: string | null;
  format: ItemFormat;
  parentSessionId: string | null;
  childSessionId: string | null;
  endedAt: string | null;
  endReason: string | null;
  messageCount: number;
  /** X2: the last item's sequence number (a pop does not lower it): with messageCount, a receipt's version. */
  lastSeq: number;
  createdAt: string;
  source: string | null;
  metadata: Record<string, unknown>;
  lastActivity: { label: string; at: string } | null;
  /** Only in a relative's lineage: this session was deleted (it answers 404 itself). */
  deletedAt?: string;
  /** H2: only on a branch's root: where it was branched from (not a parent: a branch is no rotation child). */
  branchedFrom?: BranchedFrom;
}

export function sessionView(s: SessionRecord): SessionView {
  return {
    sessionId: s.sessionId,
    conversationId: s.conversationId ?? null,
    format: s.format,
    parentSessionId: s.parentSessionId ?? null,
    childSessionId: s.childSessionId ?? null,
    endedAt: s.endedAt ?? null,
    endReason: s.endReason ?? null,
    messageCount: s.messageCount,
    lastSeq: s.lastSeq,
    createdAt: s.createdAt,
    source: s.source ?? null,
    metadata: s.metadata ?? {},
    lastActivity: s.lastActivity ? { label: s.lastActivity.label, at: s.lastActivity.at } : null,
    ...(s.deletedAt ? { deletedAt: s.deletedAt } : {}),
    ...(s.branchedFrom ? { branchedFrom: { ...s.branchedFrom } } : {}),
  };
}

/**
 * A session as GET /lineage lists it: without metadata (up to 16 KiB each and inherited by every
 * child, so a long chain's metadata alone would pass Lambda's 6 MB response limit). GET
 * /sessions/{id} shows it.
 */
export type LineageEntryView = Omit<SessionView, 'metadata'>;

export function lineageEntryView(s: SessionRecord): LineageEntryView {
  const { metadata: _metadata, ...entry } = sessionView(s);
  return entry;
}

export interface ConversationView {
  conversationId: string;
  format: ItemFormat;
  rootSessionId: string;
  liveSessionId: string;
  /** Items in the live session. */
  messageCount: number;
  /** Sessions in the chain. */
  sessions: number;
  createdAt: string;
  updatedAt: string;
  /** Last activity (appends included, to the minute): the listing's order. */
  activeAt: string;
  source: string | null;
  metadata: Record<string, unknown>;
  /** T5: whether writes need a turn (shown where the live session was read). */
  turns?: 'optional' | 'required';
  /** E6: whose engine compacts it (shown where the live session was read). */
  compaction?: CompactionPolicy;
  /** H2: only on a branch: the conversation, session and item it was branched from. */
  branchedFrom?: BranchedFrom;
  /** H3: the conversation's own retention, when set. */
  retention?: { archivedSeconds?: number; endedSessionSeconds?: number };
}

/** The policies a conversation's live session keeps (T5, E6), as its view shows them. */
export interface ConversationPolicies {
  turns: 'optional' | 'required';
  compaction: CompactionPolicy;
}

export function policiesOf(s: SessionRecord): ConversationPolicies {
  return { turns: s.turnPolicy ?? 'optional', compaction: s.compactionPolicy ?? 'service' };
}

export function conversationView(c: ConversationRecord, messageCount: number, policies?: ConversationPolicies): ConversationView {
  const view: ConversationView = {
    conversationId: c.conversationId,
    format: c.format,
    rootSessionId: c.rootSessionId,
    liveSessionId: c.liveSessionId,
    messageCount,
    sessions: c.sessions,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
    activeAt: c.activeAt,
    source: c.source ?? null,
    metadata: c.metadata ?? {},
  };
  if (c.branchedFrom !== undefined) view.branchedFrom = { ...c.branchedFrom };
  if (c.retention !== undefined) view.retention = c.retention;
  if (policies !== undefined) {
    view.turns = policies.turns;
    view.compaction = policies.compaction;
  }
  return view;
}

/** The leading items whose JSON fits in `maxBytes` (UTF-8), as a page is cut (A5). */
export function leadingWithin<T>(items: readonly T[], maxBytes: number): { items: T[]; truncated: boolean } {
  let bytes = 0;
  for (let i = 0; i < items.length; i++) {
    bytes += Buffer.byteLength(JSON.stringify(items[i]), 'utf8');
    if (bytes > maxBytes && i > 0) return { items: items.slice(0, i), truncated: true };
  }
  return { items: [...items], truncated: false };
}

/**
 * Compaction outcome as returned by POST /sessions/{id}/compress. Only `compressed` carries
 * messages (the live transcript, cut like a page to MAX_PAGE_BYTES and then `truncated`: kept
 * tool results can make it larger than a Lambda response may be); every other outcome is
 * answered without reading it (C1).
 */
export function outcomeView(o: CompactionOutcome): Record<string, unknown> {
  const base = { outcome: o.outcome, sessionId: o.sessionId, warnings: o.warnings };
  switch (o.outcome) {
    case 'compressed': {
      const { items, truncated } = leadingWithin(o.items, MAX_PAGE_BYTES);
      // P6: a partial attempt answers the summary of the part it replaced; the items after it were left as they are.
      const partial = o.partial ? { partial: true, replaced: o.replaced, remainingTokens: o.remainingTokens } : {};
      return {
        ...base,
        mode: o.mode,
        previousSessionId: o.previousSessionId,
        messages: items,
        truncated: truncated || o.partial === true,
        ...partial,
      };
    }
    case 'skipped':
      return { ...base, reason: o.reason, ...(o.holder !== undefined ? { holder: o.holder } : {}) };
    case 'noop':
    case 'disabled':
      return { ...base, reason: o.reason };
    case 'cancelled':
      return base;
  }
}
