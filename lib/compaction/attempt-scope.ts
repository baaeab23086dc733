// What one attempt holds once it won the lease (SPEC I3): the lease, the attempt record, the
// refresher and the heartbeat. close() gives all of it back, in an order that keeps every rule:
// the heartbeat's last tick lands before the final mark, the refresher stops before the release,
// an uncommitted attempt is cleared (with "completed" or "failed") before the lease is free, and
// nothing that throws on the way can skip the release.
import { errorFields } from '../errors.js';
import type { Lease, LeaseApi } from '../lease/index.js';
import type { AttemptRecord, LineageStore } from '../lineage/types.js';
import type { SessionRef } from '../session-ref.js';
import type { ActivityHeartbeat } from './heartbeat.js';
import type { Logger } from '../logger.js';
import { ACTIVITY_LABELS, type AttemptRefresher } from './types.js';

/** An error as one line of text, for the warnings a compaction returns to its caller (C12). */
export function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/**
 * Its state moves one way only, through its methods: began → kept alive → commit entered →
 * committed; close() reads it. Callers cannot set a flag out of order (I3 rests on it).
 */
export class AttemptScope {
  #attempt: AttemptRecord | undefined;
  #refresher: AttemptRefresher | undefined;
  #heartbeat: ActivityHeartbeat | undefined;
  #commitStarted = false;
  #committed = false;

  constructor(
    readonly lease: Lease,
    private readonly deps: { lease: LeaseApi; store: LineageStore; log: Logger },
    private readonly ref: SessionRef,
  ) {}

  /** The attempt record is ours (the fence is issued): close() clears it unless it committed. */
  began(attempt: AttemptRecord): void {
    this.#attempt = attempt;
  }

  /** Starts the L5 refresher and the C5 heartbeat; close() stops them. */
  keepAlive(refresher: AttemptRefresher, heartbeat: ActivityHeartbeat): void {
    if (!this.#attempt) throw new Error('keepAlive before began');
    this.#refresher = refresher;
    this.#heartbeat = heartbeat;
    refresher.start();
    heartbeat.start();
  }

  /** Aborts when the refresher gives up: the lease may be lost and the attempt must not commit (L5). */
  get leaseSignal(): AbortSignal {
    if (!this.#refresher) throw new Error('leaseSignal before keepAlive');
    return this.#refresher.signal;
  }

  /** The commit is about to be sent: the heartbeat's last tick lands first, and close() tells the store a commit started. */
  async enterCommit(): Promise<void> {
    await this.quiet();
    this.#commitStarted = true;
  }

  /** The commit landed: close() leaves the attempt record alone (the commit removed it). */
  markCommitted(): void {
    if (!this.#commitStarted) throw new Error('markCommitted before enterCommit');
    this.#committed = true;
  }

  /** Stops the heartbeat ticks (waiting for one in flight). */
  private async quiet(): Promise<void> {
    await this.#heartbeat?.stop();
  }

  async close(failed: boolean): Promise<void> {
    const { store, log } = this.deps;
    await this.quiet();
    try {
      await this.#refresher?.stop();
    } catch (err) {
      log.error('lease refresher failed to stop', { error: errorFields(err) });
    }
    if (this.#attempt && !this.#committed) {
      try {
        await store.abandonAttempt(this.ref, this.#attempt, {
          activityLabel: failed ? ACTIVITY_LABELS.failed : ACTIVITY_LABELS.completed,
          commitStarted: this.#commitStarted,
        });
      } catch (err) {
        log.error('could not clear the compaction attempt; the sweep will', { error: errorFields(err) });
      }
    }
    try {
      const r = await this.deps.lease.release(this.lease);
      if (!r.released) log.warn('lease not released', { sessionKey: this.lease.sessionKey, reason: r.reason });
    } catch (err) {
      log.error('lease release failed; it expires with its TTL', { sessionKey: this.lease.sessionKey, error: errorFields(err) });
    }
  }
}
