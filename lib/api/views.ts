// What the API shows of store records: stable field names, nulls instead of absent lineage
// links, and no internals (fences, attempts, versions).
import type { CompactionOutcome } from '../compaction/types.js';
import type { ItemFormat } from '../items/types.js';
import type { SessionRecord } from '../lineage/types.js';

export interface SessionView {
  sessionId: string;
  format: ItemFormat;
  parentSessionId: string | null;
  childSessionId: string | null;
  endedAt: string | null;
  endReason: string | null;
  messageCount: number;
  createdAt: string;
  source: string | null;
  metadata: Record<string, unknown>;
  lastActivity: { label: string; at: string } | null;
  /** Only in a relative's lineage: this session was deleted (it answers 404 itself). */
  deletedAt?: string;
}

export function sessionView(s: SessionRecord): SessionView {
  return {
    sessionId: s.sessionId,
    format: s.format,
    parentSessionId: s.parentSessionId ?? null,
    childSessionId: s.childSessionId ?? null,
    endedAt: s.endedAt ?? null,
    endReason: s.endReason ?? null,
    messageCount: s.messageCount,
    createdAt: s.createdAt,
    source: s.source ?? null,
    metadata: s.metadata ?? {},
    lastActivity: s.lastActivity ? { label: s.lastActivity.label, at: s.lastActivity.at } : null,
    ...(s.deletedAt ? { deletedAt: s.deletedAt } : {}),
  };
}

/**
 * Compaction outcome as returned by POST /sessions/{id}/compress. Only `compressed` carries
 * messages (the live transcript); every other outcome is answered without reading it (C1).
 */
export function outcomeView(o: CompactionOutcome): Record<string, unknown> {
  const base = { outcome: o.outcome, sessionId: o.sessionId, warnings: o.warnings };
  switch (o.outcome) {
    case 'compressed':
      return { ...base, mode: o.mode, previousSessionId: o.previousSessionId, messages: o.items };
    case 'skipped':
      return { ...base, reason: o.reason, ...(o.holder !== undefined ? { holder: o.holder } : {}) };
    case 'noop':
    case 'disabled':
      return { ...base, reason: o.reason };
    case 'cancelled':
      return base;
  }
}
