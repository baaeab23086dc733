// Inputs and outcomes of one compaction attempt (SPEC C1-C13).
import type { Message } from '../messages.js';
import type { SessionRef } from '../session-ref.js';

export type CompactionMode = 'in_place' | 'rotate';
export type CompactionOrigin = 'turn' | 'review' | 'manual';

export interface CompactRequest {
  ref: SessionRef;
  mode: CompactionMode;
  origin: CompactionOrigin;
  /** Identity of the caller, part of the lease token (function name, request id). */
  holder: string;
  keepLast?: number;
  /** Lambda: context.getRemainingTimeInMillis; the attempt cancels itself before commit when low (C9). */
  remainingTimeMs?: () => number;
}

export type SkipReason = 'locked' | 'lease_unavailable' | 'lease_lost' | 'adopted';
export type NoopReason = 'empty_result' | 'unchanged' | 'grown' | 'aborted' | 'nothing_to_compact';

interface OutcomeBase {
  /** The session callers should continue on. */
  sessionId: string;
  /** The input messages unless compressed. */
  messages: Message[];
  warnings: string[];
}

export type CompactionOutcome =
  | (OutcomeBase & { outcome: 'compressed'; mode: CompactionMode; previousSessionId: string })
  | (OutcomeBase & { outcome: 'skipped'; reason: SkipReason; holder?: string | null })
  | (OutcomeBase & { outcome: 'noop'; reason: NoopReason })
  | (OutcomeBase & { outcome: 'cancelled' })
  | (OutcomeBase & { outcome: 'disabled'; reason: 'review_origin' });
