// The lineage store on DynamoDB (SPEC I1, I2, I4, L6, C3, C10, C11, A1-A6, S1-S3, P1-P3):
// a thin facade over the parts, each of which owns one job.
//
// Layout (one table, pk/sk; keys.ts): session META at `T#<tenant>#S#<id>` / `META`; items under
// the same pk at `MSG#<generation>#<seq>`. Reads of the active generation are bounded by
// META.lastSeq, so items a failed commit left beyond it are never visible. A rotation's child is
// "pending" exactly while its META does not exist: no session can be read without its META, and
// cleanup (a failed commit, the sweep) deletes items only under a child id whose META is absent.
import type { SessionRef } from '../../session-ref.js';
import type {
  HeldAttemptNamed,
  AppendInput,
  AppendResult,
  AttemptRecord,
  BeginAttemptInput,
  BegunAttempt,
  BoundedSnapshot,
  CommitInput,
  CompactionPolicy,
  ConversationPage,
  ConversationRecord,
  CreateConversationInput,
  EnsureConversationResult,
  CreateResult,
  CreateSessionInput,
  ExpiredAttempt,
  HeldOutcomeRecord,
  ForkReport,
  InPlaceCommitted,
  ItemPage,
  TailRead,
  LineageStore,
  PageRequest,
  PartialCommitInput,
  PartialCommitted,
  PopResult,
  ReplaceSuffixInput,
  ReplaceSuffixResult,
  RotationCommitted,
  SessionRecord,
  SnapshotBound,
  StoreTask,
  SweepPage,
  BeginTurnInput,
  TurnCredential,
  TurnGrant,
  TurnPolicy,
  TurnView,
} from '../types.js';
import type { Item } from '../../items/types.js';
import type { BranchInput, BranchResult } from '../branches.js';
import { StaleSnapshotError } from '../errors.js';
import { Attempts } from './attempts.js';
import { Branches } from './branches.js';
import { commitPartial } from './bounded.js';
import { Commits } from './commit.js';
import { conversationIdempotencyPrefix, conversationKey } from './conversation-row.js';
import { Conversations } from './conversations.js';
import { Forks } from './forks.js';
import { HeldAttemptWrites } from './held.js';
import { toSessionRecord } from './meta-row.js';
import { metaKey, sessionPk } from './keys.js';
import { chainOf, childKeysOf, liveTip } from './links.js';
import { Sessions } from './sessions.js';
import { Turns } from './turns.js';
import { readAll, readPage, readTail } from './reads.js';
import { Table, type TableOptions } from './table.js';
import { History } from './history.js';
import { RetentionSettings } from './retention.js';
import { runEndedTask } from './expiry.js';
import type { HistoryPage, HistoryRequest, ImportInput, ImportResult, Retention } from '../history.js';
import { importConversation } from './import.js';
import { DEFAULT_IDEMPOTENCY_TTL_SECONDS } from '../limits.js';
import { Transactions } from './transactions.js';

export interface DynamoLineageStoreOptions extends TableOptions {
  /** TTL of an archived (replaced) generation; default 7 days (SPEC C11). */
  archiveRetentionSeconds?: number;
  /** How long an Idempotency-Key is remembered (A3); default 24 h. */
  idempotencyTtlSeconds?: number;
}

const DEFAULT_ARCHIVE_RETENTION_S = 7 * 24 * 3600;

export class DynamoLineageStore implements LineageStore {
  private readonly table: Table;
  private readonly sessions: Sessions;
  private readonly attempts: Attempts;
  private readonly commits: Commits;
  private readonly forks: Forks;
  private readonly held: HeldAttemptWrites;
  private readonly conversations: Conversations;
  private readonly transactions: Transactions;
  private readonly turns: Turns;
  private readonly branches: Branches;
  private readonly retention: number;
  private readonly history: History;
  private readonly idempotencyTtl: number;
  private readonly retentionSettings: RetentionSettings;

  constructor(opts: DynamoLineageStoreOptions) {
    this.table = new Table(opts);
    this.sessions = new Sessions(this.table, opts.idempotencyTtlSeconds);
    this.attempts = new Attempts(this.table);
    this.commits = new Commits(this.table, this.attempts);
    this.held = new HeldAttemptWrites(this.table);
    this.forks = new Forks(this.table);
    this.conversations = new Conversations(this.table, this.sessions);
    this.transactions = new Transactions(this.table, opts.idempotencyTtlSeconds);
    this.turns = new Turns(this.table);
    this.branches = new Branches(this.table, opts.idempotencyTtlSeconds);
    this.retention = opts.archiveRetentionSeconds ?? DEFAULT_ARCHIVE_RETENTION_S;
    this.history = new History(this.table, this.retention);
    this.idempotencyTtl = opts.idempotencyTtlSeconds ?? DEFAULT_IDEMPOTENCY_TTL_SECONDS;
    this.retentionSettings = new RetentionSettings(this.table, this.retention);
  }

  readHistory(tenantId: string, conversationId: string, req: HistoryRequest): Promise<HistoryPage & { rootSessionId: string }> {
    return this.history.ofConversation(tenantId, conversationId, req);
  }
  readSessionHistory(ref: SessionRef, req: HistoryRequest): Promise<HistoryPage> {
    return this.history.ofSession(ref.tenantId, ref.sessionId, req);
  }
  importConversation(input: ImportInput): Promise<ImportResult> {
    return importConversation(this.table, input, this.idempotencyTtl);
  }
  tenantRetention(tenantId: string): Promise<Retention> {
    return this.retentionSettings.tenant(tenantId);
  }
  setTenantRetention(tenantId: string, r: { [K in keyof Retention]?: number | null }): Promise<Retention> {
    return this.retentionSettings.setTenant(tenantId, r);
  }
  checkRetention(tenantId: string, r: Retention): Promise<void> {
    return this.retentionSettings.check(tenantId, r);
  }
  setConversationRetention(tenantId: string, conversationId: string, r: Retention): Promise<ConversationRecord> {
    return this.retentionSettings.setConversation(tenantId, conversationId, r);
  }

  createSession(input: CreateSessionInput): Promise<CreateResult> {
    return this.sessions.create(input);
  }
  getSession(ref: SessionRef): Promise<SessionRecord | null> {
    return this.sessions.get(ref);
  }
  appendItems(ref: SessionRef, input: AppendInput): Promise<AppendResult> {
    return this.sessions.append(ref, input);
  }
  readPage(ref: SessionRef, page: PageRequest): Promise<ItemPage> {
    return readPage(this.table, ref, page);
  }
  readTail(ref: SessionRef, limit: number, maxBytes: number): Promise<TailRead> {
    return readTail(this.table, ref, limit, maxBytes);
  }
  readAll(ref: SessionRef): Promise<Item[]> {
    return readAll(this.table, ref);
  }
  popLast(ref: SessionRef, turn?: TurnCredential): Promise<PopResult> {
    return this.sessions.popLast(ref, turn);
  }

  beginTurn(ref: SessionRef, input: BeginTurnInput): Promise<TurnGrant> {
    return this.turns.begin(ref, input);
  }

  heartbeatTurn(ref: SessionRef, turn: TurnCredential, ttlMs: number): Promise<TurnView> {
    return this.turns.heartbeat(ref, turn, ttlMs);
  }

  endTurn(ref: SessionRef, turn: TurnCredential): Promise<void> {
    return this.turns.end(ref, turn);
  }

  currentTurn(ref: SessionRef): Promise<TurnView | null> {
    return this.turns.current(ref);
  }

  setTurnPolicy(ref: SessionRef, policy: TurnPolicy): Promise<void> {
    return this.turns.setPolicy(ref, policy);
  }
  setCompactionPolicy(ref: SessionRef, policy: CompactionPolicy): Promise<void> {
    return this.attempts.setPolicy(ref, policy);
  }
  replaceSuffix(ref: SessionRef, input: ReplaceSuffixInput): Promise<ReplaceSuffixResult> {
    return this.transactions.replaceSuffix(ref, input);
  }

  async deleteSession(ref: SessionRef): Promise<void> {
    // The live session of a conversation takes the conversation with it (K3).
    const gone = await this.conversations.deleteSession(ref);
    await this.afterDelete(ref.tenantId, gone);
  }

  /** When the session was deleted, if it was (an operator's question: reads answer a deleted session as null). */
  async deletedAt(ref: SessionRef): Promise<string | undefined> {
    return (await this.table.getMeta(ref))?.deletedAt;
  }

  /** Whether a record exists under this session id (a deleted session's tombstone included). */
  async hasRecord(ref: SessionRef): Promise<boolean> {
    return (await this.table.getMeta(ref)) !== undefined;
  }

  async lineage(ref: SessionRef): Promise<SessionRecord[]> {
    return (await chainOf(this.table, ref)).map(toSessionRecord);
  }
  liveTip(ref: SessionRef): Promise<string | null> {
    return liveTip(this.table, ref);
  }
  async children(ref: SessionRef): Promise<SessionRecord[]> {
    const metas = await this.table.batchGetMetas(await childKeysOf(this.table, sessionPk(ref)));
    return metas
      .filter((m) => m.tenantId === ref.tenantId)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
      .map(toSessionRecord);
  }
  touchActivity(ref: SessionRef, label: string): Promise<void> {
    return this.sessions.touch(ref, label);
  }

  async beginAttempt(ref: SessionRef, input: BeginAttemptInput): Promise<BegunAttempt> {
    const begun = await this.attempts.begin(ref, input);
    // A replaced attempt (crashed, or paused past its lease) can no longer commit, and the sweep
    // will never list it again: remove what it may have written, or it is orphaned (S2).
    if (begun.replaced) {
      const replaced = begun.replaced;
      await this.attempts.removeLeftovers(ref, replaced).catch((err: unknown) => {
        this.table.warn('cleanup of a replaced attempt failed; the sweep will', err, {
          sessionId: ref.sessionId,
          attemptId: replaced.attemptId,
        });
      });
    }
    return begun;
  }
  readSnapshot(ref: SessionRef, begun: BegunAttempt): Promise<Item[]> {
    return this.attempts.snapshot(ref, begun);
  }
  readBoundedSnapshot(ref: SessionRef, begun: BegunAttempt, bound: SnapshotBound): Promise<BoundedSnapshot> {
    return this.attempts.boundedSnapshot(ref, begun, bound);
  }
  async commitPartial(ref: SessionRef, begun: BegunAttempt, input: PartialCommitInput): Promise<PartialCommitted> {
    // A held attempt commits in a later request: it reads its part (1..through, bounded by its begin)
    // again; a pop that changed those rows since made the attempt stale anyway (A6).
    const part =
      this.attempts.partOf(begun) ?? (await this.table.queryRange(sessionPk(ref), begun.session.generation, 1, input.through)).items;
    // The part's rows all go: it must end where a row ends, or items after it would go too (E8: an id's `through` is not trusted).
    const last = part.at(-1);
    if (!last || last.seq !== input.through || Number(last.row.sk.slice(last.row.sk.lastIndexOf('#') + 1)) !== input.through)
      throw new StaleSnapshotError(ref.sessionId);
    return commitPartial(this.table, ref, begun, part, input);
  }
  commitRotation(ref: SessionRef, begun: BegunAttempt, input: CommitInput): Promise<RotationCommitted> {
    return this.commits.rotate(ref, begun, input);
  }
  commitInPlace(ref: SessionRef, begun: BegunAttempt, input: CommitInput): Promise<InPlaceCommitted> {
    return this.commits.inPlace(ref, begun, input);
  }
  async abandonAttempt(
    ref: SessionRef,
    attempt: AttemptRecord,
    opts: { activityLabel?: string; commitStarted?: boolean } = {},
  ): Promise<void> {
    await this.attempts.clear(ref, attempt, opts.activityLabel);
    // Only a commit writes items before its flip; the attempt record is gone now, so no late commit can use them.
    if (opts.commitStarted) await this.attempts.removeLeftovers(ref, attempt);
  }
  readRange(ref: SessionRef, generation: number, watermark: number): Promise<Item[]> {
    return this.table.readItems(sessionPk(ref), generation, 1, watermark);
  }
  claimHeldCommit(ref: SessionRef, attemptId: string, holder: string, named: HeldAttemptNamed): Promise<BegunAttempt | null> {
    return this.held.claimCommit(ref, attemptId, holder, named);
  }
  markHeldProgress(ref: SessionRef, attemptId: string, holder: string, leaseExpiresAt: number, cutoff: number): Promise<boolean> {
    return this.held.markProgress(ref, attemptId, holder, 'compaction in progress', leaseExpiresAt, cutoff);
  }
  endHeldAttempt(
    ref: SessionRef,
    attemptId: string,
    holder: string,
    opts: { activityLabel: string; outcome: HeldOutcomeRecord; claimed: boolean },
  ): Promise<boolean> {
    return this.held.end(ref, attemptId, holder, opts.activityLabel, this.held.outcomeRow(ref, attemptId, opts.outcome), opts.claimed);
  }
  heldOutcomeRow(ref: SessionRef, attemptId: string, outcome: HeldOutcomeRecord): Record<string, unknown> {
    return this.held.outcomeRow(ref, attemptId, outcome);
  }
  readHeldOutcome(ref: SessionRef, attemptId: string): Promise<HeldOutcomeRecord | null> {
    return this.held.readOutcome(ref, attemptId);
  }
  extendAttempt(ref: SessionRef, attempt: AttemptRecord, leaseExpiresAt: number): Promise<boolean> {
    return this.attempts.extend(ref, attempt, leaseExpiresAt);
  }
  async runTask(task: StoreTask): Promise<number> {
    // H3: an archive, or a rotated parent (ended), lives as long as its conversation's retention says when
    // the task runs (DynamoDB's TTL deletes it after).
    if (task.kind !== 'archive' && task.kind !== 'ended') return this.attempts.runTask(task, this.retention);
    const meta = await this.table.getMeta(task.ref);
    const { archivedSeconds, endedSessionSeconds } = await this.retentionSettings.effective(task.ref.tenantId, meta?.conversationId);
    if (task.kind === 'ended') return runEndedTask(this.table, task, meta, endedSessionSeconds);
    return this.attempts.runTask(task, archivedSeconds);
  }

  /** Operators (`lease show`): the sessions holding a held attempt, of one tenant or all. */
  listHeldAttempts(tenantId?: string): Promise<SessionRecord[]> {
    return this.attempts.listHeld(tenantId);
  }
  listSweepWork(now: number, limit: number): Promise<SweepPage> {
    return this.attempts.listSweepWork(now, limit);
  }
  cleanExpiredAttempt(expired: ExpiredAttempt): Promise<{ cleaned: boolean; orphanMessagesRemoved: number }> {
    return this.attempts.cleanExpired(expired);
  }
  findRecentForks(since: number): Promise<ForkReport[]> {
    return this.forks.recent(since);
  }
  findAllForks(): Promise<ForkReport[]> {
    return this.forks.all();
  }
  readSweepCheckpoint(): Promise<number | null> {
    return this.forks.checkpoint();
  }
  saveSweepCheckpoint(at: number): Promise<void> {
    return this.forks.saveCheckpoint(at);
  }

  ensureConversation(input: CreateConversationInput, explicitFormat: boolean): Promise<EnsureConversationResult> {
    return this.conversations.ensure(input, explicitFormat);
  }
  getConversation(tenantId: string, conversationId: string): Promise<ConversationRecord | null> {
    return this.conversations.get(tenantId, conversationId);
  }
  async listConversations(tenantId: string, limit: number, cursor?: string): Promise<ConversationPage> {
    const page = await this.conversations.list(tenantId, limit, cursor);
    // Each one's live session count, in one batch read beside nothing else.
    const live = await this.table.batchGetMetas(page.conversations.map((c) => metaKey({ tenantId, sessionId: c.liveSessionId })));
    const counts = new Map(live.map((m) => [m.sessionId, m.messageCount]));
    return { ...page, conversations: page.conversations.map((c) => ({ ...c, messageCount: counts.get(c.liveSessionId) ?? 0 })) };
  }
  updateConversationMetadata(tenantId: string, conversationId: string, metadata: Record<string, unknown>): Promise<ConversationRecord> {
    return this.conversations.updateMetadata(tenantId, conversationId, metadata);
  }
  touchConversation(tenantId: string, conversationId: string): Promise<void> {
    return this.conversations.touch(tenantId, conversationId);
  }
  branchConversation(input: BranchInput): Promise<BranchResult> {
    return this.branches.branch(input);
  }
  async deleteConversation(tenantId: string, conversationId: string): Promise<void> {
    const gone = await this.conversations.delete(tenantId, conversationId);
    if (gone) await this.afterDelete(tenantId, gone);
  }

  /**
   * After a delete: the tombstoned sessions' items go in the background (the sweep finishes a purge
   * that does not), and a deleted conversation's Idempotency-Key records now (A3, K3); their TTL
   * removes any this misses, and a replay never answers from another incarnation (sessions.ts).
   */
  private async afterDelete(tenantId: string, gone: { conversation?: ConversationRecord; tombstoned: { sessionId: string }[] }) {
    for (const m of gone.tombstoned) {
      const ref = { tenantId, sessionId: m.sessionId };
      this.background(this.runTask({ ref, kind: 'purge', generation: 0, dueAt: this.table.now() }), `purge of ${m.sessionId}`);
    }
    const conv = gone.conversation;
    if (!conv) return;
    await this.table
      .keysWithPrefix(conversationKey(tenantId, conv.conversationId).pk, conversationIdempotencyPrefix(conv))
      .then((keys) => this.table.deleteAll(keys))
      .catch((err: unknown) => this.table.warn("removing a deleted conversation's keys failed; their TTL will", err));
  }

  /** Work after the answer: never awaited, never thrown; the sweep guarantees it happens. */
  private background(work: Promise<unknown>, what: string): void {
    work.catch((err: unknown) => this.table.warn(`${what} failed; the sweep will retry`, err));
  }
}
