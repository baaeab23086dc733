// The per-session Redlock lease (SPEC L1-L4, L6, I3) over @sesamecare-oss/redlock.
//
// Why acquire does not call redlock.acquire(): it always stores its own random value,
// but SPEC L1 requires the Redis value to be OUR token (`${holder}#${nonce}`) so that
// holderOf() can name the holder. Acquire is therefore `SET key token NX PX ttl` on every
// node (exactly what redlock's acquire script does for one key, as one atomic command),
// tallied by the same majority rule as redlock, in a single round (retryCount 0:
// contention is decided without waiting, SPEC L2). After the fence is issued, one
// redlock extend re-checks ownership and gives expiresAt (redlock's drift formula).
// Refresh and release then go through redlock itself: we build a redlock `Lock` whose
// value is our token and call redlock.extend()/release(), which run redlock's
// token-checked Lua scripts (extend/delete only if GET == token, SPEC L3) with quorum.
// redlock's `using()` is deliberately not used: it keeps retrying on a lost lock.
import { randomBytes } from 'node:crypto';
import { ExecutionError, Lock, Redlock, ResourceLockedError, type ExecutionStats } from '@sesamecare-oss/redlock';
import type { Redis } from 'ioredis';
import { LeaseUnavailableError } from './errors.js';
import type { LeaseApi } from './lease-api.js';
import { quorumSize, tallyAcquire, type NodeVote } from './quorum.js';
import type { AcquireResult, FenceIssuer, Lease, RefreshResult, ReleaseResult } from './types.js';

export const DEFAULT_LEASE_KEY_PREFIX = 'lease:session:';
const DEFAULT_DRIFT_FACTOR = 0.01;

export interface SessionLeaseOptions {
  clients: Redis[];
  fenceIssuer: FenceIssuer;
  keyPrefix?: string;
  driftFactor?: number;
}

export interface TryAcquireOptions {
  ttlMs: number;
  /** Who is asking (function name, request id...); the token adds a random nonce. */
  holder: string;
}

export function newLeaseToken(holder: string): string {
  return `${holder}#${randomBytes(12).toString('hex')}`;
}

function assertTtl(ttlMs: number): void {
  if (!Number.isInteger(ttlMs) || ttlMs <= 0) throw new RangeError(`lease ttlMs must be a positive integer, got ${ttlMs}`);
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

export class SessionLease implements LeaseApi {
  private readonly clients: Redis[];
  private readonly fenceIssuer: FenceIssuer;
  private readonly keyPrefix: string;
  private readonly driftFactor: number;
  private readonly redlock: Redlock;

  constructor(opts: SessionLeaseOptions) {
    if (opts.clients.length === 0) throw new Error('SessionLease needs at least one Redis client');
    this.clients = [...opts.clients];
    this.fenceIssuer = opts.fenceIssuer;
    this.keyPrefix = opts.keyPrefix ?? DEFAULT_LEASE_KEY_PREFIX;
    this.driftFactor = opts.driftFactor ?? DEFAULT_DRIFT_FACTOR;
    this.redlock = new Redlock(this.clients, {
      retryCount: 0,
      driftFactor: this.driftFactor,
      // redlock's scripts SELECT this db; keep it the one our SET NX writes to.
      db: this.clients[0]?.options.db ?? 0,
    });
  }

  keyOf(sessionKey: string): string {
    return `${this.keyPrefix}${sessionKey}`;
  }

  async tryAcquire(sessionKey: string, opts: TryAcquireOptions): Promise<AcquireResult> {
    assertTtl(opts.ttlMs);
    const key = this.keyOf(sessionKey);
    const token = newLeaseToken(opts.holder);
    const tally = await tallyAcquire(
      this.clients.map((client) => async (): Promise<NodeVote> => {
        const reply = await client.set(key, token, 'PX', opts.ttlMs, 'NX');
        if (reply === 'OK') return { kind: 'for' };
        if (reply === null) return { kind: 'locked' };
        return { kind: 'error', error: new Error(`unexpected SET reply ${String(reply)}`) };
      }),
    );

    if (tally.decision !== 'won') {
      // Undo a minority SET (token-checked, so another holder's key is never touched).
      await this.releaseToken(key, token);
      if (tally.decision === 'unavailable') {
        throw new LeaseUnavailableError(
          sessionKey,
          tally.votes.flatMap((v) => (v.kind === 'error' ? [v.error.message] : [])),
        );
      }
      return { acquired: false, holder: (await this.readHolder(key, token)).holder };
    }

    let fence: number;
    try {
      fence = await this.fenceIssuer.nextFence(sessionKey);
    } catch (err) {
      // I3: a lease must never outlive the attempt that took it.
      await this.releaseToken(key, token);
      throw err;
    }

    // L6: the key may have expired while nextFence ran (a pause longer than the TTL) and a
    // newer holder may have taken it with a LOWER fence than ours. Prove we still own the key
    // (token-checked extend on a quorum) before handing out the fence; otherwise back off.
    const owned = await this.extendToken(key, token, opts.ttlMs);
    if (!owned.refreshed) {
      await this.releaseToken(key, token);
      if (owned.reason === 'no_quorum') throw new LeaseUnavailableError(sessionKey, owned.nodeErrors);
      return { acquired: false, holder: (await this.readHolder(key, token)).holder };
    }
    return { acquired: true, sessionKey, token, fence, expiresAt: owned.expiresAt, ttlMs: opts.ttlMs };
  }

  async refresh(lease: Lease, ttlMs: number = lease.ttlMs): Promise<RefreshResult> {
    assertTtl(ttlMs);
    const r = await this.extendToken(this.keyOf(lease.sessionKey), lease.token, ttlMs);
    return r.refreshed ? r : { refreshed: false, reason: r.reason };
  }

  /** Token-checked quorum extend (redlock's script): the one way we prove we still own a key. */
  private async extendToken(
    key: string,
    token: string,
    ttlMs: number,
  ): Promise<{ refreshed: true; expiresAt: number } | { refreshed: false; reason: 'not_owner' | 'no_quorum'; nodeErrors: string[] }> {
    try {
      return { refreshed: true, expiresAt: (await this.redlock.extend(this.lockFor(key, token), ttlMs)).expiration };
    } catch (err) {
      return { refreshed: false, reason: await this.failureReason(err), nodeErrors: await this.nodeErrors(err) };
    }
  }

  async release(lease: Lease): Promise<ReleaseResult> {
    try {
      await this.redlock.release(this.lockFor(this.keyOf(lease.sessionKey), lease.token));
      return { released: true };
    } catch (err) {
      return { released: false, reason: await this.failureReason(err) };
    }
  }

  /**
   * Current token stored for the session (first node that has one), or null when free.
   * Throws LeaseUnavailableError when no node answered: "nobody holds it" would be a guess.
   */
  async holderOf(sessionKey: string): Promise<string | null> {
    const { holder, errors } = await this.readHolder(this.keyOf(sessionKey));
    if (holder === null && errors.length === this.clients.length) throw new LeaseUnavailableError(sessionKey, errors);
    return holder;
  }

  /**
   * A redlock Lock carrying our token. Its local expiration is set far ahead on purpose:
   * Redis (the token-checked script) is the authority on whether we still own the key,
   * and a Lease object's expiresAt goes stale after each refresh.
   */
  private lockFor(key: string, token: string): Lock {
    return new Lock(this.redlock, [key], token, [], Number.MAX_SAFE_INTEGER);
  }

  private async releaseToken(key: string, token: string): Promise<void> {
    await this.redlock.release(this.lockFor(key, token)).catch(() => undefined);
  }

  /** not_owner only when a majority of nodes answered "value is not our token". */
  private async failureReason(err: unknown): Promise<'not_owner' | 'no_quorum'> {
    if (!(err instanceof ExecutionError)) return 'no_quorum';
    const stats: ExecutionStats[] = await Promise.all(err.attempts);
    const last = stats.at(-1);
    if (!last) return 'no_quorum';
    let notOurs = 0;
    for (const e of last.votesAgainst.values()) if (e instanceof ResourceLockedError) notOurs++;
    return notOurs >= quorumSize(last.membershipSize) ? 'not_owner' : 'no_quorum';
  }

  /** One message per node that voted against (or failed) in redlock's last attempt. */
  private async nodeErrors(err: unknown): Promise<string[]> {
    if (!(err instanceof ExecutionError)) return [asError(err).message];
    const last = (await Promise.all(err.attempts)).at(-1);
    return last ? [...last.votesAgainst.values()].map((e) => e.message) : [err.message];
  }

  private async readHolder(key: string, exceptToken?: string): Promise<{ holder: string | null; errors: string[] }> {
    const values = await Promise.allSettled(this.clients.map((c) => c.get(key)));
    const errors = values.flatMap((v) => (v.status === 'rejected' ? [asError(v.reason).message] : []));
    for (const v of values) {
      if (v.status === 'fulfilled' && v.value !== null && v.value !== exceptToken) return { holder: v.value, errors };
    }
    return { holder: null, errors };
  }
}
