// Contract of the lineage store (SPEC I1, I2, I4, L6, C3, C10, C11, A1-A6, S1-S3, P1-P3).
// Store-agnostic: the DynamoDB implementation lives in ./dynamo/.
import type { Item, ItemFormat } from '../items/types.js';
import type { SessionRef } from '../session-ref.js';
import type { BranchedFrom, BranchInput, BranchResult } from './branches.js';
import type { HistoryPage, HistoryRequest, ImportInput, ImportResult, Retention } from './history.js';

export type EndReason = 'compression';

export interface ActivityMark {
  label: string;
  at: string;
}

/** The in-flight compaction attempt recorded on the parent; the sweep cleans expired ones. */
export interface AttemptRecord {
  attemptId: string;
  holder: string;
  /** Issued by beginAttempt: above every fence and generation this session saw (SPEC L6). */
  fence: number;
  startedAt: string;
  /** Epoch ms; past it with no commit, the attempt is abandoned (SPEC S1). */
  leaseExpiresAt: number;
  /** Id the child will get if this attempt rotates; its pending messages live under it. */
  pendingChildId: string;
  /** Highest sequence in the snapshot; later items are the concurrent tail (SPEC I4). */
  watermark: number;
  /** A held attempt (SPEC E1): the agent's engine runs between requests. */
  held?: HeldInfo;
}

/** What a held attempt's id says of it; its commit acts only on the attempt that matches all of it (E3, E8). */
export interface HeldAttemptNamed {
  fence: number;
  generation: number;
  watermark: number;
  mode: 'in_place' | 'rotate';
  ttlMs: number;
}

/** What a held attempt keeps on its record between the agent's requests (SPEC E1-E5). */
export interface HeldInfo {
  mode: 'in_place' | 'rotate';
  ttlMs: number;
  /** Epoch ms of the last "compaction started/in progress" mark (C5: at most one write per 10 s, E2). */
  markedAt: number;
  /** Epoch ms a commit claimed the attempt (an abort then answers commit_in_progress, E4). */
  committing?: number;
}

export interface SessionRecord {
  /** T5: 'required' when writes need a turn token (absent: optional). */
  turnPolicy?: TurnPolicy;
  /** E6: 'agent' when only the agent's own engine (held attempts) compacts it (absent: service). */
  compactionPolicy?: CompactionPolicy;
  tenantId: string;
  sessionId: string;
  /** K1: the conversation (chain) this session belongs to; absent on records from before conversations. */
  conversationId?: string;
  format: ItemFormat;
  source?: string;
  metadata?: Record<string, unknown>;
  createdAt: string;
  parentSessionId?: string;
  childSessionId?: string;
  /** First session of the chain; absent on the root itself (and on records from before it existed). */
  rootSessionId?: string;
  endedAt?: string;
  endReason?: EndReason;
  /** A6: set on a deleted session (only ever seen in a relative's lineage; the session itself answers 404). */
  deletedAt?: string;
  /** Fence of the newest attempt begun (absent on records written before fencing: SPEC C3). */
  fence?: number;
  generation: number;
  /** Items in the active generation. */
  messageCount: number;
  /** Highest item sequence number in the active generation (0 when empty); pops never reuse one. */
  lastSeq: number;
  /** Running token estimate of the active items (lib/items estimateTokens): the after-turn threshold reads it. */
  tokenEstimate: number;
  lastActivity?: ActivityMark;
  attempt?: AttemptRecord;
  /** H2: on a branch's root, where it was branched from. */
  branchedFrom?: BranchedFrom;
}

export interface CreateSessionInput {
  tenantId: string;
  sessionId?: string;
  /** K1: the chain's conversation id; default the root session's own id (`POST /sessions`). */
  conversationId?: string;
  format?: ItemFormat;
  source?: string;
  metadata?: Record<string, unknown>;
  /** A3: applied at most once per tenant + key. */
  idempotency?: IdempotencyInput;
  /** Builds the response the key remembers. */
  respond?: (session: SessionRecord) => StoredResponse;
}

/** An Idempotency-Key and a digest of the request it came with (SPEC A3). */
export interface IdempotencyInput {
  key: string;
  /** Digest of the request body (and anything else that makes two requests "the same"). */
  requestHash: string;
  /**
   * K2: the key belongs to this conversation (one incarnation of it, named by its root session)
   * instead of the session, so a keyed retry that lands after a rotation finds the first try.
   */
  conversation?: ConversationScope;
}

export interface ConversationScope {
  conversationId: string;
  rootSessionId: string;
}

/** The first response of an idempotent request, kept with its key. */
export interface StoredResponse {
  status: number;
  body: unknown;
}

/** An append's items, checked against the session's format, with each item's token estimate. */
export interface PreparedItems {
  items: readonly Item[];
  tokenEstimates: readonly number[];
}

export interface AppendInput {
  /** Called once with the session as read (its format decides what a valid item is); may throw to refuse. */
  prepare: (session: SessionRecord) => PreparedItems;
  /** A4: land only if the session holds exactly this many items; else CountMismatchError. */
  expectedCount?: number;
  /** A3: the key's record goes into the same transaction as the items. */
  idempotency?: IdempotencyInput;
  /** Builds the response the key remembers, from the session as the append leaves it. */
  respond?: (session: SessionRecord, appended: number) => StoredResponse;
  /** T3: the write lands only while this turn is current (checked in the append's own transaction). */
  turn?: TurnCredential;
}

/**
 * X1 replace_suffix: the live session's last `expectedSuffix.length` items, compared as canonical
 * JSON with `expectedSuffix`, are removed and `replacement` appended, in one conditional write.
 * An empty suffix and an empty replacement record the operation id alone (an empty append).
 */
export interface ReplaceSuffixInput {
  /** Called once with the session as read; may throw to refuse (nothing is written). */
  prepare: (session: SessionRecord) => { expectedSuffix: readonly Item[]; replacement: PreparedItems };
  /** The operation id as a key (X1: conversation-scoped on the conversation routes). */
  idempotency: IdempotencyInput;
  respond: (session: SessionRecord, removed: number, appended: number) => StoredResponse;
  /** T3: lands only while this turn is current; T5: without one, only if turns are optional. */
  turn?: TurnCredential;
}

export type ReplaceSuffixResult =
  | { replayed: false; session: SessionRecord; removed: number; appended: number; response: StoredResponse }
  | { replayed: true; response: StoredResponse };
/** SPEC T2: what a begin does when another turn is current. */
export type TurnStrategy = 'reject' | 'enqueue' | 'interrupt' | 'rollback';

/** A turn's id and its secret token, as a write presents them (the Turn-Token header holds both). */
export interface TurnCredential {
  turnId: string;
  token: string;
}

/** A turn as anyone may see it (never its token). */
export interface TurnView {
  turnId: string;
  startedAt: string;
  expiresAt: string;
}

/** T1: a granted turn; the token is returned here only. */
export interface TurnGrant extends TurnView {
  turnToken: string;
  fence: number;
}

export interface BeginTurnInput {
  strategy: TurnStrategy;
  ttlMs: number;
  /** enqueue only: how long to wait for the active turn to end. */
  waitMs: number;
  /** For refusals: the conversation the session belongs to. */
  conversationId: string;
}

/** T5: whether writes need a turn. */
export type TurnPolicy = 'optional' | 'required';

/** E6: whose engine compacts a conversation: the service's (default) or only the agent's own (held attempts). */
export type CompactionPolicy = 'service' | 'agent';

export type AppendResult =
  { replayed: false; session: SessionRecord; appended: number; response?: StoredResponse } | { replayed: true; response: StoredResponse };

export type CreateResult = { replayed: false; session: SessionRecord } | { replayed: true; response: StoredResponse };

/** Where a page read starts: after `afterSeq` of `generation`. Opaque to clients (lib/lineage/cursor.ts). */
export interface PagePosition {
  generation: number;
  afterSeq: number;
}

export interface PageRequest {
  /** Items per page (1-1000). */
  limit: number;
  /** Response-size budget for the items' JSON (a page stops before it would pass it). */
  maxBytes: number;
  from?: PagePosition;
}

export interface ItemPage {
  session: SessionRecord;
  items: Item[];
  /** Where the next page starts, or null at the end. */
  next: PagePosition | null;
}

export interface TailRead {
  session: SessionRecord;
  items: Item[];
  truncated: boolean;
}

export interface PopResult {
  session: SessionRecord;
  removed: Item | null;
}

/** P6: the most one attempt reads and replaces (lib/config.ts compactionAttemptBudget). */
export interface AttemptBudget {
  maxBytes: number;
  maxTokens: number;
}

/** A budget and where a part may end (A2: never between a tool call and its result). */
export interface SnapshotBound extends AttemptBudget {
  cutOk?: (part: readonly Item[]) => boolean;
}

/** The oldest part of the snapshot that one attempt replaces (P6). */
export interface BoundedSnapshot {
  items: Item[];
  /** Sequence number of the part's last item. */
  through: number;
  /** Sequence number of its first item (the part's seqs are firstSeq..through, with gaps where pops left them). */
  firstSeq: number;
  /** Items after `through` (to the watermark) exist and stay verbatim: the attempt is partial. */
  partial: boolean;
  /** Token estimate of the part. */
  tokens: number;
}

export interface PartialCommitInput extends CommitInput {
  /** The part's last sequence number (BoundedSnapshot.through). */
  through: number;
}

export interface PartialCommitted {
  session: SessionRecord;
  /** The summary that replaced the part (the items after it are unchanged). */
  items: Item[];
  /** Items the part held. */
  replaced: number;
  through: number;
}

export interface BeginAttemptInput {
  /** P6: the snapshot read beside the begin reads at most this (the part an attempt replaces). */
  bound?: SnapshotBound;
  holder: string;
  leaseExpiresAt: number;
  /** Written with the attempt (C5 "compaction started"). */
  activityLabel: string;
  /** A held attempt (E1): recorded with it. */
  held?: HeldInfo;
  /**
   * E6: the attempt runs the service's engine and was not forced: refused (AgentEnginePolicyError)
   * on a session whose compaction policy is `agent`, by the begin's own condition.
   */
  serviceEngine?: boolean;
  /**
   * X2 (an ownership receipt): the attempt begins only while the session holds exactly this many
   * items, checked by the begin's own conditional write (the one that issues the fence), else
   * StaleSnapshotError and nothing is written.
   */
  expectedCount?: number;
  /** X2: and whose last sequence number is still this (a pop then an append keeps the count, not lastSeq). */
  expectedLastSeq?: number;
}

export interface BegunAttempt {
  attempt: AttemptRecord;
  /** The session as the attempt left it (fence and attempt set). */
  session: SessionRecord;
  /** The store's concurrency token as of the begin; a commit conditions on it. */
  version: number;
  /** Work the begin left for later: leftovers of an expired attempt it replaced. */
  replaced?: AttemptRecord;
}

export interface CommitInput {
  compacted: readonly Item[];
  /** Token estimate of each compacted item (the tail's estimates come from the store). */
  tokenEstimates: readonly number[];
  /** Written by the commit itself (C5 "compaction completed", P1). */
  activityLabel: string;
  /** A held attempt's outcome row (E3), put in the commit's own transaction: a repeated commit replays it. */
  record?: Record<string, unknown>;
  /** T3: the held commit carried a Turn-Token: it lands only while that turn is current (checked in the commit's transaction). */
  turn?: TurnCredential;
}

export interface RotationCommitted {
  parent: SessionRecord;
  child: SessionRecord;
  /** Child's items: compacted list + concurrent tail. */
  items: Item[];
  tailCarried: number;
}

export interface InPlaceCommitted {
  session: SessionRecord;
  items: Item[];
  tailCarried: number;
  /** Archiving the replaced generation, left off the commit path (P3): run it in the background; the sweep runs it otherwise. */
  archive: StoreTask;
}

/** How a held attempt ended, kept for a repeated commit and for status reads (E3, E4). */
export interface HeldOutcomeRecord {
  /** committed: a commit request ended it (compressed or a no-op); lost: its lease was found lost. */
  status: 'committed' | 'cancelled' | 'lost';
  /** The answer the ending request gave (a compaction outcome view). */
  answer: Record<string, unknown>;
  /** The attempt's recorded holder (its token's digest): a repeat is answered only with that token (E8). */
  holder?: string;
}

export interface ExpiredAttempt {
  ref: SessionRef;
  attempt: AttemptRecord;
}

/** Deferred storage work (archive a replaced generation, purge a deleted session), done by the sweep if not sooner. */
export interface StoreTask {
  ref: SessionRef;
  /**
   * parts: chunks an append wrote ahead of a commit that never landed (or whose row a pop removed).
   * ended: a rotated parent's rows get the TTL of the conversation's endedSessionSeconds (H3).
   */
  kind: 'archive' | 'purge' | 'parts' | 'ended';
  generation: number;
  dueAt: number;
  /** parts: the write id (and row) whose chunks go. */
  scope?: string;
}

export interface ForkReport {
  parent: SessionRef;
  childSessionIds: string[];
}

export interface SweepPage {
  attempts: ExpiredAttempt[];
  tasks: StoreTask[];
}

/** K1: one stable id for a whole chain; the live tip moves in the rotation's commit (K2). */
export interface ConversationRecord {
  tenantId: string;
  conversationId: string;
  format: ItemFormat;
  source?: string;
  metadata?: Record<string, unknown>;
  rootSessionId: string;
  liveSessionId: string;
  /** Sessions in the chain (1 + rotations). */
  sessions: number;
  createdAt: string;
  /** Last change of the record (create, metadata, rotation). */
  updatedAt: string;
  /** Last activity (also appends, coarsely): what GET /conversations orders by, newest first. */
  activeAt: string;
  /** H3: the conversation's own retention, when set. */
  retention?: Retention;
  /** Items in the live session, where the store read it along (the listing). */
  messageCount?: number;
  /** H2: the conversation this one was branched from (absent: not a branch). */
  branchedFrom?: BranchedFrom;
}

export interface CreateConversationInput {
  tenantId: string;
  conversationId: string;
  format?: ItemFormat;
  source?: string;
  metadata?: Record<string, unknown>;
}

export type EnsureConversationResult = { created: boolean; conversation: ConversationRecord };

export interface ConversationPage {
  conversations: ConversationRecord[];
  /** Opaque position for the next page, or null at the end. */
  next: string | null;
}

export interface LineageStore {
  createSession(input: CreateSessionInput): Promise<CreateResult>;
  getSession(ref: SessionRef): Promise<SessionRecord | null>;
  /**
   * Appends in one transaction (all or nothing). Throws SessionNotFoundError, SessionEndedError (names the
   * live tip), CountMismatchError, IdempotencyKeyReusedError, ItemTooLargeError. Never blocked by a lease.
   */
  appendItems(ref: SessionRef, input: AppendInput): Promise<AppendResult>;
  /** One page of the active generation, in order (A5). CursorStaleError when the generation was replaced. */
  readPage(ref: SessionRef, page: PageRequest): Promise<ItemPage>;
  /**
   * The latest `limit` items in chronological order (A5 tail), cut to `maxBytes` by dropping the
   * oldest; `truncated` says the cut dropped some of the `limit` (older items were left out).
   */
  readTail(ref: SessionRef, limit: number, maxBytes: number): Promise<TailRead>;
  /** Every active item (in-process callers and tests; the API pages). */
  readAll(ref: SessionRef): Promise<Item[]>;
  /** A6: removes the last item; an in-flight attempt that snapshotted it can no longer commit. */
  /**
   * X1: replaces the live session's last items when they equal the expected suffix, in one
   * transaction with the operation id's record. SuffixMismatchError (nothing written) otherwise;
   * an in-flight attempt that snapshotted a removed item can no longer commit (A6).
   */
  replaceSuffix(ref: SessionRef, input: ReplaceSuffixInput): Promise<ReplaceSuffixResult>;
  popLast(ref: SessionRef, turn?: TurnCredential): Promise<PopResult>;
  /** T1/T2: grants a turn on the live session `ref` or throws ConversationBusyError (or RollbackUnavailableError). */
  beginTurn(ref: SessionRef, input: BeginTurnInput): Promise<TurnGrant>;
  /** Extends the current turn; TurnNotCurrentError / TurnTokenInvalidError when it is not ours. */
  heartbeatTurn(ref: SessionRef, turn: TurnCredential, ttlMs: number): Promise<TurnView>;
  endTurn(ref: SessionRef, turn: TurnCredential): Promise<void>;
  currentTurn(ref: SessionRef): Promise<TurnView | null>;
  /** T5. */
  setTurnPolicy(ref: SessionRef, policy: TurnPolicy): Promise<void>;
  /** E6: kept on the live session's record (carried to a rotation's child); the begin of a service attempt checks it. */
  setCompactionPolicy(ref: SessionRef, policy: CompactionPolicy): Promise<void>;
  /** A6: the session answers as not found from now on; its items are purged off the request path. */
  deleteSession(ref: SessionRef): Promise<void>;
  /** Root to live tip. */
  lineage(ref: SessionRef): Promise<SessionRecord[]>;
  /** H1: one page of everything the conversation held (ConversationNotFoundError). */
  readHistory(tenantId: string, conversationId: string, req: HistoryRequest): Promise<HistoryPage & { rootSessionId: string }>;
  /** H1: the same for the conversation of `ref`, up to and including that session. */
  readSessionHistory(ref: SessionRef, req: HistoryRequest): Promise<HistoryPage>;
  /** H3: the tenant's retention setting (operators set it; absent fields: the defaults). */
  tenantRetention(tenantId: string): Promise<Retention>;
  setTenantRetention(tenantId: string, r: { [K in keyof Retention]?: number | null }): Promise<Retention>;
  /** H5: restores an export into the new conversation `input.conversationId` (ImportTargetExistsError when it exists). */
  importConversation(input: ImportInput): Promise<ImportResult>;
  /** H3: throws RetentionOverLimitError when `r` asks for more than the tenant allows (a check before a write that must not half-apply). */
  checkRetention(tenantId: string, r: Retention): Promise<void>;
  /** H3: the conversation's own retention (the caller checked it against the tenant's). */
  setConversationRetention(tenantId: string, conversationId: string, r: Retention): Promise<ConversationRecord>;
  /** The live session of the chain `ref` belongs to (C4, F1), in a bounded number of reads. */
  liveTip(ref: SessionRef): Promise<string | null>;
  children(ref: SessionRef): Promise<SessionRecord[]>;
  /** Best-effort activity mark (heartbeat, SPEC C5); never bumps the version. */
  touchActivity(ref: SessionRef, label: string): Promise<void>;

  /**
   * One conditional update (P1): issues the fence, records the attempt with its watermark and marks
   * "compaction started". SessionEndedError when the session already has a child (C4).
   */
  beginAttempt(ref: SessionRef, input: BeginAttemptInput): Promise<BegunAttempt>;
  /**
   * The attempt's snapshot: active items up to its watermark (the compressor's input). A store may
   * have sent this read beside the begin (P1); the first call for an attempt then hands it over.
   */
  readSnapshot(ref: SessionRef, begun: BegunAttempt): Promise<Item[]>;
  /** P6: the oldest bounded part of the snapshot (all of it when it fits), from the read beside the begin when there was one. */
  readBoundedSnapshot(ref: SessionRef, begun: BegunAttempt, bound: SnapshotBound): Promise<BoundedSnapshot>;
  /** P6: replaces exactly the part 1..through (read by readBoundedSnapshot) with the summary; later items stay where they are. */
  commitPartial(ref: SessionRef, begun: BegunAttempt, input: PartialCommitInput): Promise<PartialCommitted>;
  /** SPEC C10: one transaction ends the parent and creates the child (with its items when they fit); carries the tail. */
  commitRotation(ref: SessionRef, begun: BegunAttempt, input: CommitInput): Promise<RotationCommitted>;
  /** SPEC C11: a fenced flip to a new generation; the replaced one is archived off the path (P3). */
  commitInPlace(ref: SessionRef, begun: BegunAttempt, input: CommitInput): Promise<InPlaceCommitted>;
  /**
   * Clears our attempt (if still ours) with a final activity mark. After a commit that started
   * (`commitStarted`), also deletes what it may have written. Idempotent.
   */
  abandonAttempt(ref: SessionRef, attempt: AttemptRecord, opts?: { activityLabel?: string; commitStarted?: boolean }): Promise<void>;
  /** Moves the recorded lease expiry of a still-current attempt (after a lease refresh). False when it is gone. */
  extendAttempt(ref: SessionRef, attempt: AttemptRecord, leaseExpiresAt: number): Promise<boolean>;
  /** Items 1..watermark of `generation`: a held attempt's snapshot, read again by its commit (E3). */
  readRange(ref: SessionRef, generation: number, watermark: number): Promise<Item[]>;
  /**
   * E3: claims a held attempt for its commit, checked against its recorded holder and against what
   * the agent's attempt id names (fence, snapshot, mode, TTL); null when it is not ours, or not that attempt.
   */
  claimHeldCommit(ref: SessionRef, attemptId: string, holder: string, named: HeldAttemptNamed): Promise<BegunAttempt | null>;
  /** E2: the throttled "in progress" mark plus the recorded lease expiry; false when not due (or not ours). */
  markHeldProgress(ref: SessionRef, attemptId: string, holder: string, leaseExpiresAt: number, cutoff: number): Promise<boolean>;
  /** E4: clears a held attempt with its final mark and leaves its outcome row; an unclaimed-only end refuses during a commit. */
  endHeldAttempt(
    ref: SessionRef,
    attemptId: string,
    holder: string,
    opts: { activityLabel: string; outcome: HeldOutcomeRecord; claimed: boolean },
  ): Promise<boolean>;
  /** The row a held commit writes in its own transaction (CommitInput.record). */
  heldOutcomeRow(ref: SessionRef, attemptId: string, outcome: HeldOutcomeRecord): Record<string, unknown>;
  readHeldOutcome(ref: SessionRef, attemptId: string): Promise<HeldOutcomeRecord | null>;
  /** Runs deferred work now (archive after an in-place commit); the sweep does it otherwise. */
  runTask(task: StoreTask): Promise<number>;

  /** Sweep (SPEC S1-S3): expired attempts and due tasks, every shard queried, bounded per call. */
  listSweepWork(now: number, limit: number): Promise<SweepPage>;
  /** Removes what an expired attempt left and clears it, if it is still the same attempt. */
  cleanExpiredAttempt(expired: ExpiredAttempt): Promise<{ cleaned: boolean; orphanMessagesRemoved: number }>;
  /** Parents with more than one child among the rotations since `since` (epoch ms); cost flat in history. */
  findRecentForks(since: number): Promise<ForkReport[]>;
  /** Where the last sweep's fork audit got to (epoch ms), or null before the first. */
  readSweepCheckpoint(): Promise<number | null>;
  saveSweepCheckpoint(at: number): Promise<void>;
  /** Every parent with more than one child (operator audit; scans the whole children index). */
  findAllForks(): Promise<ForkReport[]>;

  /**
   * K1: creates the conversation with its root session in one transaction, or returns the one that
   * exists (`created: false`); concurrent calls create exactly one. FormatMismatchError when an
   * explicit `format` differs from the existing one.
   */
  ensureConversation(input: CreateConversationInput, explicitFormat: boolean): Promise<EnsureConversationResult>;
  getConversation(tenantId: string, conversationId: string): Promise<ConversationRecord | null>;
  /** Most recently active first; `cursor` is a previous page's `next`. */
  listConversations(tenantId: string, limit: number, cursor?: string): Promise<ConversationPage>;
  /** Replaces the metadata; ConversationNotFoundError when there is none. */
  updateConversationMetadata(tenantId: string, conversationId: string, metadata: Record<string, unknown>): Promise<ConversationRecord>;
  /** Best-effort activity mark for the listing order; never throws. */
  touchConversation(tenantId: string, conversationId: string): Promise<void>;
  /** K3: deletes every session of the chain and the conversation; ConversationNotFoundError when there is none. */
  deleteConversation(tenantId: string, conversationId: string): Promise<void>;
  /** H2: a new conversation holding a copy of `from`'s items 1..n, its root carrying `branchedFrom`. */
  branchConversation(input: BranchInput): Promise<BranchResult>;
}
