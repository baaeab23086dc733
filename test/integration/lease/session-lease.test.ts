// SessionLease against the shared 3-node Redis of the test stack (SPEC L1, L2, L3, P2, I3).
import { describe, expect, it, vi } from 'vitest';
import { SessionLease } from '../../../lib/lease/index.js';
import { RoundTrips } from '../../support/round-trips.js';
import { acquired, leasePairForSuite, newSessionKey, valuesOnNodes } from './lease-test-support.js';

const TTL = 30_000;

describe('SessionLease on shared Redis nodes', () => {
  const [a, b] = leasePairForSuite();

  it('L1: the Redis value on every node is our token `${holder}#${nonce}`, under lease:session:<key>', async () => {
    const key = newSessionKey();
    const lease = acquired(await a.lease.tryAcquire(key, { ttlMs: TTL, holder: 'fn-a:req-1' }));
    expect(lease.token).toMatch(/^fn-a:req-1#[0-9a-f]{16,}$/);
    expect(lease.sessionKey).toBe(key);
    expect(await valuesOnNodes(a.clients, key)).toEqual([lease.token, lease.token, lease.token]);
    expect(await b.lease.holderOf(key)).toBe(lease.token);
    await a.lease.release(lease);
  });

  it('L1: two attempts by the same holder name get different tokens', async () => {
    const key = newSessionKey();
    const first = acquired(await a.lease.tryAcquire(key, { ttlMs: TTL, holder: 'same' }));
    await a.lease.release(first);
    const second = acquired(await a.lease.tryAcquire(key, { ttlMs: TTL, holder: 'same' }));
    expect(second.token).not.toBe(first.token);
    await a.lease.release(second);
  });

  it('L1/L2: two independent instances race; exactly one acquires, the other is told the holder token', async () => {
    for (let round = 0; round < 10; round++) {
      const key = newSessionKey();
      const [ra, rb] = await Promise.all([
        a.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' }),
        b.lease.tryAcquire(key, { ttlMs: TTL, holder: 'b' }),
      ]);
      const winners = [ra, rb].filter((r) => r.acquired);
      expect(winners).toHaveLength(1);
      const winner = acquired(winners[0]!);
      const loser = ra.acquired ? rb : ra;
      expect(loser).toEqual({ acquired: false, holder: winner.token });
      // The loser's minority SETs (if any) were undone: every node holds the winner's token.
      expect(await valuesOnNodes(a.clients, key)).toEqual([winner.token, winner.token, winner.token]);
      await (ra.acquired ? a : b).lease.release(winner);
    }
  });

  it('L2 P2: a loser is answered in one round: one SET NX PX GET per node, nothing else, and it names the holder', async () => {
    const key = newSessionKey();
    const held = acquired(await a.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' }));
    const sets = b.clients.map((c) => vi.spyOn(c, 'set'));
    const trips = new RoundTrips().watchRedis(b.clients);
    try {
      const { result, calls, phases } = await trips.during(() => b.lease.tryAcquire(key, { ttlMs: TTL, holder: 'b' }));
      expect(result).toEqual({ acquired: false, holder: held.token });
      // No undo (no node said OK) and no holder read: the GET option of the SET already told us.
      expect(calls.map((c) => c.op)).toEqual(['set', 'set', 'set']);
      expect(phases.redisRounds).toBe(1);
      for (const s of sets) expect(s.mock.calls[0]?.slice(2)).toEqual(['PX', TTL, 'NX', 'GET']);
    } finally {
      trips.restore();
      sets.forEach((s) => s.mockRestore());
      await a.lease.release(held);
    }
  });

  it('P2: a lost round undoes our SET only on the node that stored it, and leaves the holder untouched', async () => {
    const key = newSessionKey();
    // Another holder has two of three nodes; node 0 is free, so our SET lands there only.
    await Promise.all(b.clients.slice(1).map((c) => c.set(`lease:session:${key}`, 'other#1', 'PX', TTL)));
    const trips = new RoundTrips().watchRedis(a.clients);
    try {
      const { result, calls } = await trips.during(() => a.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' }));
      expect(result).toEqual({ acquired: false, holder: 'other#1' });
      const undo = calls.filter((c) => c.op !== 'set');
      expect(undo.map((c) => c.node)).toEqual([0]);
      expect(await valuesOnNodes(a.clients, key)).toEqual([null, 'other#1', 'other#1']);
    } finally {
      trips.restore();
      await Promise.all(a.clients.map((c) => c.del(`lease:session:${key}`)));
    }
  });

  it('L1: leases of different sessions are independent', async () => {
    const k1 = newSessionKey();
    const k2 = newSessionKey();
    const l1 = acquired(await a.lease.tryAcquire(k1, { ttlMs: TTL, holder: 'a' }));
    const l2 = acquired(await b.lease.tryAcquire(k2, { ttlMs: TTL, holder: 'b' }));
    expect(await a.lease.holderOf(k1)).toBe(l1.token);
    expect(await a.lease.holderOf(k2)).toBe(l2.token);
    await a.lease.release(l1);
    await b.lease.release(l2);
  });

  it('L2: acquired result carries token and expiresAt = start + ttl - drift', async () => {
    const key = newSessionKey();
    const before = Date.now();
    const lease = acquired(await a.lease.tryAcquire(key, { ttlMs: 10_000, holder: 'a' }));
    const after = Date.now();
    const drift = Math.round(0.01 * 10_000) + 2;
    expect(lease.ttlMs).toBe(10_000);
    expect(lease.expiresAt).toBeGreaterThanOrEqual(before + 10_000 - drift);
    expect(lease.expiresAt).toBeLessThanOrEqual(after + 10_000 - drift);
    await a.lease.release(lease);
  });

  it('L3: refresh extends the key TTL on every node while the value is our token', async () => {
    const key = newSessionKey();
    const lease = acquired(await a.lease.tryAcquire(key, { ttlMs: 5_000, holder: 'a' }));
    const r = await a.lease.refresh(lease, 60_000);
    expect(r).toMatchObject({ refreshed: true });
    if (r.refreshed) expect(r.expiresAt).toBeGreaterThan(lease.expiresAt);
    const pttls = await Promise.all(a.clients.map((c) => c.pttl(`lease:session:${key}`)));
    for (const p of pttls) expect(p).toBeGreaterThan(5_000);
    // A Lease object whose expiresAt is stale (after a refresh) can still be refreshed.
    expect(await a.lease.refresh(lease)).toMatchObject({ refreshed: true });
    expect(await a.lease.release(lease)).toEqual({ released: true });
    expect(await valuesOnNodes(a.clients, key)).toEqual([null, null, null]);
  });

  it('L3: refresh and release are refused once the value was changed behind the owner; the other value survives', async () => {
    const key = newSessionKey();
    const lease = acquired(await a.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' }));
    await Promise.all(a.clients.map((c) => c.set(`lease:session:${key}`, 'intruder#1', 'PX', TTL)));
    expect(await a.lease.refresh(lease)).toEqual({ refreshed: false, reason: 'not_owner' });
    expect(await a.lease.release(lease)).toEqual({ released: false, reason: 'not_owner' });
    expect(await valuesOnNodes(a.clients, key)).toEqual(['intruder#1', 'intruder#1', 'intruder#1']);
    const pttls = await Promise.all(a.clients.map((c) => c.pttl(`lease:session:${key}`)));
    for (const p of pttls) expect(p).toBeLessThanOrEqual(TTL); // not extended by the refused refresh
    await Promise.all(a.clients.map((c) => c.del(`lease:session:${key}`)));
  });

  it("L3: release never deletes another holder's key (ABA: lease lapsed and was re-acquired)", async () => {
    const key = newSessionKey();
    const old = acquired(await a.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' }));
    // Simulate expiry of A's lease on every node, then B takes the session.
    await Promise.all(a.clients.map((c) => c.del(`lease:session:${key}`)));
    const fresh = acquired(await b.lease.tryAcquire(key, { ttlMs: TTL, holder: 'b' }));
    expect(await a.lease.release(old)).toEqual({ released: false, reason: 'not_owner' });
    expect(await a.lease.refresh(old)).toEqual({ refreshed: false, reason: 'not_owner' });
    expect(await valuesOnNodes(b.clients, key)).toEqual([fresh.token, fresh.token, fresh.token]);
    expect(await b.lease.release(fresh)).toEqual({ released: true });
  });

  it('L3: releasing twice reports not_owner the second time', async () => {
    const key = newSessionKey();
    const lease = acquired(await a.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' }));
    expect(await a.lease.release(lease)).toEqual({ released: true });
    expect(await a.lease.release(lease)).toEqual({ released: false, reason: 'not_owner' });
  });

  it('L3/I3: release frees the lease for the next holder', async () => {
    const key = newSessionKey();
    const lease = acquired(await a.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' }));
    expect(await b.lease.tryAcquire(key, { ttlMs: TTL, holder: 'b' })).toMatchObject({ acquired: false });
    await a.lease.release(lease);
    expect(await a.lease.holderOf(key)).toBeNull();
    const next = acquired(await b.lease.tryAcquire(key, { ttlMs: TTL, holder: 'b' }));
    await b.lease.release(next);
  });

  it('L2: rejects a non-integer or non-positive ttl before touching Redis', async () => {
    await expect(a.lease.tryAcquire(newSessionKey(), { ttlMs: 0, holder: 'a' })).rejects.toBeInstanceOf(RangeError);
    await expect(a.lease.tryAcquire(newSessionKey(), { ttlMs: 1.5, holder: 'a' })).rejects.toBeInstanceOf(RangeError);
  });

  it('L1: a custom key prefix is honoured', async () => {
    const lease = new SessionLease({ clients: a.clients, keyPrefix: 'test:lease:' });
    const key = newSessionKey();
    const l = acquired(await lease.tryAcquire(key, { ttlMs: TTL, holder: 'p' }));
    expect(await a.clients[0]!.get(`test:lease:${key}`)).toBe(l.token);
    expect(await a.lease.holderOf(key)).toBeNull();
    await lease.release(l);
  });
});
