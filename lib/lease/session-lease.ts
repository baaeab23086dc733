// The per-session Redlock lease (SPEC L1-L4, L6, I3, P2) over @sesamecare-oss/redlock.
//
// Why acquire does not call redlock.acquire(): it always stores its own random value,
// but SPEC L1 requires the Redis value to be OUR token (`${holder}#${nonce}`) so a loser
// can name the holder. Acquire is therefore one round of `SET key token PX ttl NX GET` on
// every node in parallel (Redis >= 7.0): a node answers nil when it stored our token and the
// holder's token when the key was taken, so a loser learns "locked" and the holder in that
// one round (P2). The majority and drift rules are redlock's. A lost round undoes our SET
// only on the nodes that stored it (token-checked).
//
// The fencing number (L6) is issued by the lineage store's first write under the lease; the
// attempt then proves it still owns the key with one token-checked quorum extend (refresh),
// which runs beside its transcript read. Refresh and release go through redlock itself: we
// build a redlock `Lock` whose value is our token and call redlock.extend()/release(), which
// run redlock's token-checked Lua scripts (extend/delete only if GET == token, SPEC L3).
// redlock's `using()` is deliberately not used: it keeps retrying on a lost lock.
import { randomBytes } from 'node:crypto';
import { ExecutionError, Lock, Redlock, ResourceLockedError, type ExecutionStats } from '@sesamecare-oss/redlock';
import type { Redis } from 'ioredis';
import { asError } from '../errors.js';
import { LeaseUnavailableError, RedisVersionError } from './errors.js';
import type { LeaseApi } from './lease-api.js';
import { quorumSize, tallyAcquire, type NodeVote } from './quorum.js';
import type { AcquireResult, Lease, RefreshResult, ReleaseResult } from './types.js';

export const DEFAULT_LEASE_KEY_PREFIX = 'lease:session:';
const DEFAULT_DRIFT_FACTOR = 0.01;
/** How long a lost round waits for its remaining replies before answering (they normally arrive within a millisecond). */
const LATE_VOTE_WAIT_MS = 50;

// Delete only if the key still holds our token: one node's share of a token-checked release.
const DELETE_IF_OURS = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

export interface SessionLeaseOptions {
  clients: Redis[];
  keyPrefix?: string;
  driftFactor?: number;
  now?: () => number;
}

export interface TryAcquireOptions {
  ttlMs: number;
  /** Who is asking (function name, request id...); the token adds a random nonce. */
  holder: string;
  /** The Redis value to hold, when the caller made it (a held attempt's, derived from its secret: E8). */
  token?: string;
}

export function newLeaseToken(holder: string): string {
  return `${holder}#${randomBytes(12).toString('hex')}`;
}

function assertTtl(ttlMs: number): void {
  if (!Number.isInteger(ttlMs) || ttlMs <= 0) throw new RangeError(`lease ttlMs must be a positive integer, got ${ttlMs}`);
}

/** One node's answer to `SET key token PX ttl NX GET`. */
function voteOf(reply: unknown): NodeVote {
  if (reply === null) return { kind: 'for' };
  if (typeof reply === 'string') return { kind: 'locked', holder: reply };
  return { kind: 'error', error: new Error(`unexpected SET reply ${JSON.stringify(reply)}`) };
}

/**
 * Fails with RedisVersionError when a reachable node is older than 7.0 (SET NX ... GET is a
 * syntax error there). Nodes that do not answer are skipped: they count as down until they do.
 */
export async function assertRedisVersion(clients: readonly Redis[]): Promise<void> {
  const infos = await Promise.allSettled(clients.map((c) => c.info('server')));
  infos.forEach((info, i) => {
    if (info.status !== 'fulfilled') return;
    const version = /redis_version:(\d+)\.(\d+)/.exec(info.value);
    if (version && Number(version[1]) < 7) {
      const c = clients[i]!;
      throw new RedisVersionError(`${c.options.host}:${c.options.port}`, `${version[1]}.${version[2]}`);
    }
  });
}

export class SessionLease implements LeaseApi {
  private readonly clients: Redis[];
  private readonly keyPrefix: string;
  private readonly driftFactor: number;
  private readonly now: () => number;
  private readonly redlock: Redlock;

  constructor(opts: SessionLeaseOptions) {
    if (opts.clients.length === 0) throw new Error('SessionLease needs at least one Redis client');
    this.clients = [...opts.clients];
    this.keyPrefix = opts.keyPrefix ?? DEFAULT_LEASE_KEY_PREFIX;
    this.driftFactor = opts.driftFactor ?? DEFAULT_DRIFT_FACTOR;
    this.now = opts.now ?? Date.now;
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
    const token = opts.token ?? newLeaseToken(opts.holder);
    const started = this.now();
    const tally = await tallyAcquire(
      this.clients.map((client) => async () => voteOf(await client.set(key, token, 'PX', opts.ttlMs, 'NX', 'GET'))),
    );
    // redlock's validity rule: what is left of the TTL after the round trip and clock drift.
    const expiresAt = started + opts.ttlMs - (Math.round(opts.ttlMs * this.driftFactor) + 2);
    if (tally.decision === 'won' && expiresAt > this.now()) {
      return { acquired: true, sessionKey, token, expiresAt, ttlMs: opts.ttlMs };
    }
    await this.undoMinority(key, token, tally.votes, tally.settled);
    if (tally.decision === 'unavailable') {
      throw new LeaseUnavailableError(
        sessionKey,
        tally.votes.flatMap((v) => (v?.kind === 'error' ? [v.error.message] : [])),
      );
    }
    const holder = tally.votes.find((v): v is Extract<NodeVote, { kind: 'locked' }> => v?.kind === 'locked')?.holder ?? null;
    return { acquired: false, holder };
  }

  /**
   * Undoes our SET where a node stored it, and only there (P2: a clean loss costs no second round).
   * The round's other replies are usually a moment behind the decision: they are waited for
   * briefly, so a node that said OK is undone before we answer; a node slower than that (hung,
   * partitioned) is undone whenever its reply arrives, without holding up the answer.
   */
  private async undoMinority(
    key: string,
    token: string,
    decided: readonly (NodeVote | undefined)[],
    settled: Promise<NodeVote[]>,
  ): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const brief = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), LATE_VOTE_WAIT_MS);
    });
    const all = await Promise.race([settled, brief]).finally(() => clearTimeout(timer));
    const votes = all ?? decided;
    const undo = (i: number) => this.clients[i]!.eval(DELETE_IF_OURS, 1, key, token).catch(() => undefined);
    // A node whose reply failed (a command timeout on a hung node) may still run our SET later: its
    // undo is queued behind the SET on the same connection, without holding up the answer.
    const mayHoldIt = (v: NodeVote | undefined) => v?.kind === 'error';
    votes.forEach((v, i) => mayHoldIt(v) && void undo(i));
    await Promise.all(votes.flatMap((v, i) => (v?.kind === 'for' ? [undo(i)] : [])));
    if (!all)
      void settled.then((late) => late.forEach((v, i) => votes[i] === undefined && (v.kind === 'for' || mayHoldIt(v)) && void undo(i)));
  }

  async refresh(lease: Lease, ttlMs: number = lease.ttlMs): Promise<RefreshResult> {
    assertTtl(ttlMs);
    const key = this.keyOf(lease.sessionKey);
    try {
      return { refreshed: true, expiresAt: (await this.redlock.extend(this.lockFor(key, lease.token), ttlMs)).expiration };
    } catch (err) {
      return { refreshed: false, reason: await this.failureReason(err) };
    }
  }

  async release(lease: Pick<Lease, 'sessionKey' | 'token'>): Promise<ReleaseResult> {
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
    const key = this.keyOf(sessionKey);
    const values = await Promise.allSettled(this.clients.map((c) => c.get(key)));
    for (const v of values) if (v.status === 'fulfilled' && v.value !== null) return v.value;
    const errors = values.flatMap((v) => (v.status === 'rejected' ? [asError(v.reason).message] : []));
    if (errors.length === this.clients.length) throw new LeaseUnavailableError(sessionKey, errors);
    return null;
  }

  /**
   * A redlock Lock carrying our token. Its local expiration is set far ahead on purpose:
   * Redis (the token-checked script) is the authority on whether we still own the key,
   * and a Lease object's expiresAt goes stale after each refresh.
   */
  private lockFor(key: string, token: string): Lock {
    return new Lock(this.redlock, [key], token, [], Number.MAX_SAFE_INTEGER);
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
}
