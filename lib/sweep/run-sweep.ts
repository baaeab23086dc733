// Scheduled sweep (SPEC S1-S3): clean attempts whose lease expired without a commit, run the
// deferred storage tasks nobody finished (archive a replaced generation, purge a deleted
// session), and audit the rotations since the last run for forks (parents with >1 child).
// Safe alongside live compactions and other sweeps: every removal is the store's conditional
// cleanup of one specific attempt, tasks are idempotent, and the checkpoint only moves forward.
import type { ExpiredAttempt, ForkReport, LineageStore, StoreTask } from '../lineage/types.js';
import type { SessionRef } from '../session-ref.js';

/** The audit looks this far behind its checkpoint, so a rotation committed while the last sweep ran is not missed. */
export const FORK_AUDIT_OVERLAP_MS = 10 * 60_000;
/** With no checkpoint yet (first run), the audit covers this much history. */
export const FIRST_AUDIT_WINDOW_MS = 24 * 3600_000;

export interface SweepDeps {
  store: Pick<
    LineageStore,
    'listSweepWork' | 'cleanExpiredAttempt' | 'runTask' | 'findRecentForks' | 'readSweepCheckpoint' | 'saveSweepCheckpoint'
  >;
  now?: () => number;
  /**
   * Optional second opinion from the lease backend: true when the session's lease is
   * still held (a refresher may keep a slow attempt alive past its recorded expiry).
   * Such attempts are left alone; an error here does not stop the cleanup (fencing keeps it safe).
   */
  leaseHeld?: (ref: SessionRef) => Promise<boolean>;
  /** Told about each attempt or task whose cleanup threw; the sweep goes on with the rest. */
  onCleanupError?: (err: unknown, what: ExpiredAttempt | StoreTask) => void;
  /** Entries listed per page, and the most pages one run works through (the next run continues). */
  pageSize?: number;
  maxPages?: number;
}

export interface SweepResult {
  expiredAttemptsCleaned: number;
  orphanMessagesRemoved: number;
  tasksRun: number;
  forksFound: number;
  forks: ForkReport[];
  /** Rotations audited since this instant (epoch ms). */
  auditedSince: number;
  /** Expired by the record but the lease is still held: left for a later sweep. */
  liveAttemptsSkipped: number;
  cleanupFailures: number;
}

export async function runSweep(deps: SweepDeps): Promise<SweepResult> {
  const now = (deps.now ?? Date.now)();
  const result: SweepResult = {
    expiredAttemptsCleaned: 0,
    orphanMessagesRemoved: 0,
    tasksRun: 0,
    forksFound: 0,
    forks: [],
    auditedSince: now,
    liveAttemptsSkipped: 0,
    cleanupFailures: 0,
  };
  const pageSize = deps.pageSize ?? 100;
  // The audit's checkpoint is read beside the first page of work (one sequential call fewer, P4).
  const checkpointRead = deps.store.readSweepCheckpoint();
  checkpointRead.catch(() => undefined); // awaited below; a failure is reported there
  const seen = new Set<string>();
  for (let page = 0; page < (deps.maxPages ?? 20); page++) {
    // Cleaned entries leave the index; skipped or failed ones stay listed, so only new ones count.
    const work = await deps.store.listSweepWork(now, pageSize);
    const attempts = work.attempts.filter((e) => !seen.has(e.attempt.attemptId));
    const tasks = work.tasks.filter((t) => !seen.has(taskId(t)));
    attempts.forEach((e) => seen.add(e.attempt.attemptId));
    tasks.forEach((t) => seen.add(taskId(t)));
    await cleanAttempts(attempts);
    await runTasks(tasks);
    const listed = work.attempts.length + work.tasks.length;
    if (listed < pageSize || attempts.length + tasks.length === 0) break;
  }
  // Only the rotations since the last run: the audit's cost does not grow with history.
  const checkpoint = await checkpointRead;
  result.auditedSince = checkpoint === null ? now - FIRST_AUDIT_WINDOW_MS : checkpoint - FORK_AUDIT_OVERLAP_MS;
  result.forks = await deps.store.findRecentForks(result.auditedSince);
  result.forksFound = result.forks.length;
  await deps.store.saveSweepCheckpoint(now);
  return result;

  async function cleanAttempts(page: ExpiredAttempt[]): Promise<void> {
    for (const expired of page) {
      try {
        if (deps.leaseHeld && (await leaseHeldSafely(deps.leaseHeld, expired.ref))) {
          result.liveAttemptsSkipped++;
          continue;
        }
        const r = await deps.store.cleanExpiredAttempt(expired);
        if (r.cleaned) result.expiredAttemptsCleaned++;
        result.orphanMessagesRemoved += r.orphanMessagesRemoved;
      } catch (err) {
        result.cleanupFailures++;
        deps.onCleanupError?.(err, expired);
      }
    }
  }

  async function runTasks(tasks: StoreTask[]): Promise<void> {
    for (const task of tasks) {
      try {
        await deps.store.runTask(task);
        result.tasksRun++;
      } catch (err) {
        result.cleanupFailures++;
        deps.onCleanupError?.(err, task);
      }
    }
  }
}

function taskId(t: StoreTask): string {
  return `${t.ref.tenantId}/${t.ref.sessionId}/${t.kind}/${t.scope ?? t.generation}`;
}

async function leaseHeldSafely(check: (ref: SessionRef) => Promise<boolean>, ref: SessionRef): Promise<boolean> {
  try {
    return await check(ref);
  } catch {
    return false;
  }
}
