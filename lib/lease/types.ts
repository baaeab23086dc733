// Contract of the session lease (SPEC L1-L7). Implemented by session-lease.ts.
// The fencing number (L6) is not part of the lease: the lineage store issues it in the first
// write under the lease (beginAttempt), after Redis said yes (L2).

export interface Lease {
  readonly sessionKey: string;
  /** Unique per attempt; the Redis value. */
  readonly token: string;
  /** Epoch ms at which the lease expires unless refreshed (already reduced by clock drift). */
  readonly expiresAt: number;
  readonly ttlMs: number;
}

export type AcquireResult = ({ acquired: true } & Lease) | { acquired: false; holder: string | null };

export type RefreshResult = { refreshed: true; expiresAt: number } | { refreshed: false; reason: 'not_owner' | 'no_quorum' };
export type ReleaseResult = { released: true } | { released: false; reason: 'not_owner' | 'no_quorum' };
