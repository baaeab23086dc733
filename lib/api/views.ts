// What the API shows of store records: stable field names, nulls instead of absent
// lineage links, and no internals (fences, attempts).
import type { CompactionOutcome } from '../compaction/types.js';
import type { SessionRecord } from '../lineage/types.js';

export interface SessionView {
  sessionId: string;
  parentSessionId: string | null;
  childSessionId: string | null;
  endedAt: string | null;
  endReason: string | null;
  messageCount: number;
  createdAt: string;
  source: string | null;
  metadata: Record<string, unknown>;
  lastActivity: { label: string; at: string } | null;
}

export function sessionView(s: SessionRecord): SessionView {
  return {
    sessionId: s.sessionId,
    parentSessionId: s.parentSessionId ?? null,
    childSessionId: s.childSessionId ?? null,
    endedAt: s.endedAt ?? null,
    endReason: s.endReason ?? null,
    messageCount: s.messageCount,
    createdAt: s.createdAt,
    source: s.source ?? null,
    metadata: s.metadata ?? {},
    lastActivity: s.lastActivity ? { label: s.lastActivity.label, at: s.lastActivity.at } : null,
  };
}

/** Compaction outcome as returned by POST /sessions/{id}/compress; messages only when they changed. */
export function outcomeView(o: CompactionOutcome): Record<string, unknown> {
  const base = { outcome: o.outcome, sessionId: o.sessionId, warnings: o.warnings };
  switch (o.outcome) {
    case 'compressed':
      return { ...base, mode: o.mode, previousSessionId: o.previousSessionId, messages: o.messages };
    case 'skipped':
    case 'noop':
    case 'disabled':
      return { ...base, reason: o.reason };
    case 'cancelled':
      return base;
  }
}

/**
 * Only an unreachable lease backend is a 503 + Retry-After (SPEC F1). Every other outcome,
 * including skipped/locked (another caller is compacting right now), is a definitive 200 answer.
 */
export function isRetryableOutcome(o: CompactionOutcome): boolean {
  return o.outcome === 'skipped' && o.reason === 'lease_unavailable';
}
