// Scheduled sweep (SPEC S1-S3): clean attempts whose lease expired without a commit,
// count the orphan messages that removed, and report forks (parents with >1 child).
// Safe alongside live compactions and other sweeps: every removal is the store's
// conditional cleanup of one specific attempt, so a racing sweep or a newer attempt wins cleanly.
import type { ExpiredAttempt, ForkReport, LineageStore } from '../lineage/types.js';
import type { SessionRef } from '../session-ref.js';

export interface SweepDeps {
  store: Pick<LineageStore, 'listExpiredAttempts' | 'cleanExpiredAttempt' | 'findForks'>;
  now?: () => number;
  /**
   * Optional second opinion from the lease backend: true when the session's lease is
   * still held (a refresher may keep a slow attempt alive past its recorded expiry).
   * Such attempts are left alone; an error here does not stop the cleanup (fencing keeps it safe).
   */
  leaseHeld?: (ref: SessionRef) => Promise<boolean>;
  /** Told about each attempt whose cleanup threw; the sweep goes on with the rest. */
  onCleanupError?: (err: unknown, expired: ExpiredAttempt) => void;
  /** Attempts listed per page, and the most pages one run works through (the next run continues). */
  pageSize?: number;
  maxPages?: number;
}

export interface SweepResult {
  expiredAttemptsCleaned: number;
  orphanMessagesRemoved: number;
  forksFound: number;
  forks: ForkReport[];
  /** Expired by the record but the lease is still held: left for a later sweep. */
  liveAttemptsSkipped: number;
  cleanupFailures: number;
}

export async function runSweep(deps: SweepDeps): Promise<SweepResult> {
  const now = (deps.now ?? Date.now)();
  const result: SweepResult = {
    expiredAttemptsCleaned: 0,
    orphanMessagesRemoved: 0,
    forksFound: 0,
    forks: [],
    liveAttemptsSkipped: 0,
    cleanupFailures: 0,
  };
  const pageSize = deps.pageSize ?? 100;
  const seen = new Set<string>();
  for (let page = 0; page < (deps.maxPages ?? 20); page++) {
    // Cleaned attempts leave the index; skipped or failed ones stay listed, so only new ones count.
    const listed = await deps.store.listExpiredAttempts(now, pageSize);
    const fresh = listed.filter((e) => !seen.has(e.attempt.attemptId));
    for (const e of fresh) seen.add(e.attempt.attemptId);
    await cleanPage(fresh);
    if (listed.length < pageSize || fresh.length === 0) break;
  }
  result.forks = await deps.store.findForks();
  result.forksFound = result.forks.length;
  return result;

  async function cleanPage(page: ExpiredAttempt[]): Promise<void> {
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
}

async function leaseHeldSafely(check: (ref: SessionRef) => Promise<boolean>, ref: SessionRef): Promise<boolean> {
  try {
    return await check(ref);
  } catch {
    return false;
  }
}
