// The lease operations compaction depends on, as an interface, so tests can inject
// fault-injecting fakes for failures real Redis cannot produce. SessionLease implements it.
import type { AcquireResult, Lease, RefreshResult, ReleaseResult } from './types.js';

export interface LeaseApi {
  /** One round, never waits: acquired, held by another (with the holder), or throws LeaseUnavailableError. */
  tryAcquire(sessionKey: string, opts: { ttlMs: number; holder: string; token?: string }): Promise<AcquireResult>;
  /** Token-checked quorum extend (also the ownership check of L6); never throws for Redis errors (no_quorum). */
  refresh(lease: Lease, ttlMs?: number): Promise<RefreshResult>;
  /** Token-checked delete; never deletes another holder's key; never throws for Redis errors. */
  release(lease: Pick<Lease, 'sessionKey' | 'token'>): Promise<ReleaseResult>;
  holderOf(sessionKey: string): Promise<string | null>;
}
