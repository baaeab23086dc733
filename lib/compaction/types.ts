// Inputs and outcomes of one compaction attempt (SPEC C1-C13).
import type { CompressionEngine } from '../compressors/types.js';
import type { LeaseApi } from '../lease/index.js';
import type { Item } from '../items/types.js';
import type { Logger } from '../logger.js';
import type { AttemptBudget, LineageStore, StoreTask } from '../lineage/types.js';
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
  /** Token budget handed to engines that accept `targetTokens` (C6). */
  targetTokens?: number;
  /** Free-text focus handed to engines that accept `focus` (C6). */
  focus?: string;
  /**
   * In-process callers only (C1): answer outcomes other than `compressed` with the session's items
   * unchanged. HTTP and queue callers already hold the transcript, so they leave this off and
   * a loser is answered from the lease decision alone (P2).
   */
  returnInput?: boolean;
  /** The request or message that asked (x-request-id, SQS message id): carried into the SessionCompacted event. */
  correlationId?: string;
  /** E6: compact with the service's engine even when the session's compaction policy is `agent`. */
  force?: boolean;
}

export type SkipReason = 'locked' | 'lease_unavailable' | 'lease_lost' | 'adopted' | 'stale';
/** C13: a review fork; E6: the session's policy leaves compaction to the agent's own engine. */
export type DisabledReason = 'review_origin' | 'agent_engine';
export type NoopReason = 'empty_result' | 'unchanged' | 'grown' | 'aborted' | 'nothing_to_compact';

interface OutcomeBase {
  /** The session callers should continue on (the live tip when adopted). */
  sessionId: string;
  /** The input items, unchanged: only when the request asked for them (returnInput). */
  items?: Item[];
  warnings: string[];
}

export type CompactionOutcome =
  | (Omit<OutcomeBase, 'items'> & {
      outcome: 'compressed';
      mode: CompactionMode;
      previousSessionId: string;
      /** The live session's items: compacted list + concurrent tail. */
      items: Item[];
      /** Work left off the commit path (archiving the replaced generation, P3): the caller runs it in the background. */
      deferred?: StoreTask;
      /** In place: the generation that became active. */
      generation?: number;
      /** How long the commit took (metrics: CommitLatency). */
      commitMs: number;
      /** K1: the conversation the session belongs to (absent for sessions from before conversations). */
      conversationId?: string;
      /**
       * P6: only the oldest bounded part was summarized (in place, whatever the mode asked); the
       * items after it are unchanged and not in `items`, which holds the summary alone.
       */
      partial?: true;
      /** P6, partial: items the part held. */
      replaced?: number;
      /** P6, partial: the session's token estimate after this attempt (what is left to compact). */
      remainingTokens?: number;
    })
  | (OutcomeBase & { outcome: 'skipped'; reason: SkipReason; holder?: string | null })
  | (OutcomeBase & { outcome: 'noop'; reason: NoopReason })
  | (OutcomeBase & { outcome: 'cancelled' })
  | (OutcomeBase & { outcome: 'disabled'; reason: DisabledReason });

// ---- Added by the compaction attempt (lib/compaction/compact-session.ts) ----

/** Heartbeat labels written through LineageStore.touchActivity (SPEC C5). */
export const ACTIVITY_LABELS = {
  started: 'compaction started',
  inProgress: 'compaction in progress',
  completed: 'compaction completed',
  failed: 'compaction failed',
} as const;

/** What the attempt needs from a lease refresher (LeaseRefresher satisfies it; SPEC L5). */
export interface AttemptRefresher {
  start(): void;
  stop(): Promise<void>;
  /** Aborts when the refresher gives up: the attempt must not commit. */
  readonly signal: AbortSignal;
}

export interface AttemptRefresherOptions {
  refresh: () => Promise<boolean>;
  /** The ownership check already made: the refresher's immediate first refresh (L5, P1). */
  initial?: Promise<boolean>;
  ttlMs: number;
  intervalMs?: number;
  /** P6: no refresh after this long (the invocation's time before the commit margin); unset: none. */
  stopAfterMs?: number;
  onGiveUp?: (reason: string) => void;
}

export type RefresherFactory = (opts: AttemptRefresherOptions) => AttemptRefresher;

export interface CompactionDeps {
  lease: LeaseApi;
  store: LineageStore;
  engine: CompressionEngine;
  /** P6: the most one attempt reads and summarizes; default lib/config.ts DEFAULT_ATTEMPT_MAX_*. */
  attemptBudget?: AttemptBudget;
  /** Lease TTL; the refresher keeps it alive while the attempt runs. Default 30 s. */
  leaseTtlMs?: number;
  /** Heartbeat period (C5); anything but a finite positive number means 60 s. */
  heartbeatIntervalMs?: unknown;
  /** Refresh period; default `defaultRefreshInterval(leaseTtlMs)` (L5). */
  refreshIntervalMs?: number;
  /** No commit when `req.remainingTimeMs()` is below this (C9). Default 5 s. */
  commitSafetyMarginMs?: number;
  /** Called for every warning as it arises (C12). If it throws, the attempt stops there: no commit, the error propagates, the lease is released. */
  onWarning?: (w: string) => void;
  /** Where the attempt's warnings go (Powertools Logger satisfies it); default: nowhere. */
  logger?: Logger;
  /** Builds the lease refresher; tests inject faulty ones. Default `new LeaseRefresher(opts)`. */
  createRefresher?: RefresherFactory;
  now?: () => number;
}
