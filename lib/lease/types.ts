// Contract of the session lease (SPEC L1-L7). Implemented by session-lease.ts.
/** Issues the fencing number at acquire (SPEC L6); implemented by the lineage store. */
export interface FenceIssuer {
  /** Atomically increments and returns the session's fence counter. */
  nextFence(sessionKey: string): Promise<number>;
}

export interface Lease {
  readonly sessionKey: string;
  /** Unique per attempt; the Redis value. */
  readonly token: string;
  readonly fence: number;
  /** Epoch ms at which the lease expires unless refreshed. */
  readonly expiresAt: number;
  readonly ttlMs: number;
}

export type AcquireResult =
  | ({ acquired: true } & Lease)
  | { acquired: false; holder: string | null };

export type RefreshResult = { refreshed: true; expiresAt: number } | { refreshed: false; reason: 'not_owner' | 'no_quorum' };
export type ReleaseResult = { released: true } | { released: false; reason: 'not_owner' | 'no_quorum' };
