// The options and events of LineageSession (agents-session.ts), in a file of their own.
import type { LineageClient } from './client.js';
import type { CompactionEngine, CompactWithResult } from './held.js';
import type { CompressMode, CompressOrigin } from './types.js';

export type LineageSessionEvent =
  /** This object's PUT created the conversation (first use, or the first after clearSession); `sessionId` is its root session. */
  | { type: 'created'; conversationId: string; sessionId: string }
  /** `sessionId`: the session the items landed on (the live one when the service answered). */
  | { type: 'appended'; sessionId: string; count: number; messageCount: number; replayed: boolean; idempotencyKey: string }
  /** The live session changed: our compact() rotated it (or adopted another's rotation), or an answer showed a rotation made elsewhere. */
  | { type: 'followed'; from: string; to: string; via: 'compaction' | 'rotation' }
  | { type: 'compacted'; response: CompactWithResult }
  /** runCompaction (the SDK's best-effort post-turn hook) failed; the run goes on. Without onEvent this is a console.warn. */
  | { type: 'compaction_failed'; conversationId: string | undefined; sessionId: string | undefined; error: unknown }
  /** The conversation was deleted (every session of its chain); the next use creates it again under the same id. */
  | { type: 'cleared'; conversationId: string };

export interface LineageCompactionPolicy {
  /** Mode of `runCompaction` and of `compact()` without one; default in_place. */
  mode?: CompressMode;
  keepLast?: number;
  /**
   * The SDK calls runCompaction after every turn it persists. Compact then only when the live
   * session holds more than this many items (unset: only when the runner passes `force`; the
   * service's own after-turn consumer compacts by size anyway, SPEC F3).
   */
  afterTurnAboveItems?: number;
  /**
   * Your own compactor (e.g. responsesCompactEngine): runCompaction and compact() then hold the
   * service's lease and fence and commit its replacement (client.compactWith, SPEC E1-E4);
   * keepLast does not apply. Unset: the service's own engine compacts.
   */
  engine?: CompactionEngine;
}

export interface LineageSessionOptions {
  client: LineageClient;
  /**
   * The conversation id (SPEC K1: 1-128 letters, digits and `._:@-`, scoped to the API key's
   * tenant), e.g. your user's or thread's id. Created on first use if it does not exist.
   * Unset: a random UUID, chosen on first use. getSessionId() answers it for the object's life.
   */
  sessionId?: string;
  /** For the conversation this creates (first use, and after clearSession). */
  source?: string;
  metadata?: Record<string, unknown>;
  compaction?: LineageCompactionPolicy;
  onEvent?: (event: LineageSessionEvent) => void;
}

export interface CompactOptions {
  mode?: CompressMode;
  keepLast?: number;
  origin?: CompressOrigin;
}
