// Contract of the lineage store (SPEC I1, I2, I4, L6, C3, C10, C11, S1-S3).
// Implemented on DynamoDB by dynamo-lineage-store.ts.
import type { FenceIssuer } from '../lease/types.js';
import type { Message } from '../messages.js';
import type { SessionRef } from '../session-ref.js';

export type EndReason = 'compression';

export interface ActivityMark {
  label: string;
  at: string;
}

/** The in-flight compaction attempt recorded on the parent; the sweep cleans expired ones. */
export interface AttemptRecord {
  attemptId: string;
  holder: string;
  fence: number;
  startedAt: string;
  /** Epoch ms; past it with no commit, the attempt is abandoned (SPEC S1). */
  leaseExpiresAt: number;
  /** Id the child will get if this attempt rotates; its pending messages live under it. */
  pendingChildId: string;
}

export interface SessionRecord {
  tenantId: string;
  sessionId: string;
  source?: string;
  metadata?: Record<string, unknown>;
  createdAt: string;
  parentSessionId?: string;
  childSessionId?: string;
  endedAt?: string;
  endReason?: EndReason;
  /** Fence of the newest attempt begun (absent on records written before fencing: SPEC C3). */
  fence?: number;
  generation: number;
  messageCount: number;
  /** Highest message sequence number in the active generation (0 when empty). */
  lastSeq: number;
  lastActivity?: ActivityMark;
  attempt?: AttemptRecord;
}

export interface CreateSessionInput {
  tenantId: string;
  sessionId?: string;
  source?: string;
  metadata?: Record<string, unknown>;
}

export interface BeginAttemptInput {
  holder: string;
  fence: number;
  leaseExpiresAt: number;
}

export interface BegunAttempt {
  attempt: AttemptRecord;
  session: SessionRecord;
  /** Highest sequence included in `messages`; later appends are the concurrent tail (SPEC I4). */
  watermark: number;
  /** Active-generation messages up to the watermark: the compressor's input. */
  messages: Message[];
}

export interface RotationCommitted {
  parent: SessionRecord;
  child: SessionRecord;
  /** Child's messages: compacted list + concurrent tail. */
  messages: Message[];
  tailCarried: number;
}

export interface InPlaceCommitted {
  session: SessionRecord;
  messages: Message[];
  tailCarried: number;
}

export interface ExpiredAttempt {
  ref: SessionRef;
  attempt: AttemptRecord;
}

export interface ForkReport {
  parent: SessionRef;
  childSessionIds: string[];
}

export interface LineageStore extends FenceIssuer {
  createSession(input: CreateSessionInput): Promise<SessionRecord>;
  getSession(ref: SessionRef): Promise<SessionRecord | null>;
  /** Throws SessionNotFoundError / SessionEndedError (names the live child). Never blocked by a lease. */
  appendMessages(ref: SessionRef, messages: readonly Message[]): Promise<{ session: SessionRecord; appended: number }>;
  /** Active generation, in order. */
  readMessages(ref: SessionRef): Promise<Message[]>;
  /** Root to live tip, following parentSessionId up and childSessionId down. */
  lineage(ref: SessionRef): Promise<SessionRecord[]>;
  children(ref: SessionRef): Promise<SessionRecord[]>;
  /** Best-effort activity mark (heartbeat, SPEC C5). */
  touchActivity(ref: SessionRef, label: string): Promise<void>;

  /** One conditional update: fence := input.fence (must be newer), attempt recorded; returns the input snapshot. */
  beginAttempt(ref: SessionRef, input: BeginAttemptInput): Promise<BegunAttempt>;
  /** SPEC C10: one transaction ends the parent and creates the child; carries the tail. */
  commitRotation(ref: SessionRef, attempt: AttemptRecord, compacted: readonly Message[]): Promise<RotationCommitted>;
  /** SPEC C11: new generation, fenced flip, old generation archived with a TTL. */
  commitInPlace(ref: SessionRef, attempt: AttemptRecord, compacted: readonly Message[]): Promise<InPlaceCommitted>;
  /** Clears our attempt (if still ours) and deletes any pending child messages. Idempotent. */
  abandonAttempt(ref: SessionRef, attempt: AttemptRecord): Promise<void>;
  /**
   * Moves the recorded lease expiry of a still-current attempt (call after a lease refresh), so the sweep
   * does not clean an attempt whose lease is alive (SPEC S3). False when the attempt is no longer recorded.
   * Optional so fakes need not implement it.
   */
  extendAttempt?(ref: SessionRef, attempt: AttemptRecord, leaseExpiresAt: number): Promise<boolean>;

  /** Sweep (SPEC S1-S3): attempts whose lease expired before `now`, via the sparse GSI. */
  listExpiredAttempts(now: number, limit?: number): Promise<ExpiredAttempt[]>;
  /** Removes what an expired attempt left (pending child messages) and clears it, if still the same attempt. */
  cleanExpiredAttempt(expired: ExpiredAttempt): Promise<{ cleaned: boolean; orphanMessagesRemoved: number }>;
  /** Parents with more than one child (must be none). */
  findForks(): Promise<ForkReport[]>;
}
