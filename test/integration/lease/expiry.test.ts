// Expiry and keep-alive on real Redis with real timers (SPEC L7, L5). No duration is
// asserted: we poll for the expected state with generous bounds.
import { describe, expect, it, vi } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { LeaseRefresher } from '../../../lib/lease/index.js';
import { acquired, acquireWhenFree, leasePairForSuite, newSessionKey, valuesOnNodes } from './lease-test-support.js';

describe('lease expiry and refresh', () => {
  const [a, b] = leasePairForSuite();

  it('L7: an expired lease is reclaimed by a new holder; the old owner can no longer refresh or release it', async () => {
    const key = newSessionKey();
    const old = acquired(await a.lease.tryAcquire(key, { ttlMs: 300, holder: 'crashed' }));
    expect(await b.lease.tryAcquire(key, { ttlMs: 30_000, holder: 'next' })).toEqual({ acquired: false, holder: old.token });
    const next = await acquireWhenFree(b.lease, key, 'next');
    expect(next.token).not.toBe(old.token);
    expect(await a.lease.refresh(old)).toEqual({ refreshed: false, reason: 'not_owner' });
    expect(await a.lease.release(old)).toEqual({ released: false, reason: 'not_owner' });
    expect(await valuesOnNodes(b.clients, key)).toEqual([next.token, next.token, next.token]);
    expect(await b.lease.release(next)).toEqual({ released: true });
  });

  it("L7/L5: a live owner's refresher keeps the lease past its initial TTL", async () => {
    const ttlMs = 600;
    // One round: hold a 600 ms lease for 3x its TTL with a refresher running.
    const round = async () => {
      const key = newSessionKey();
      const lease = acquired(await a.lease.tryAcquire(key, { ttlMs, holder: 'alive' }));
      // [start, end] of each successful refresh: Redis reset the expiry somewhere inside it.
      const successes: Array<[number, number]> = [[Date.now(), Date.now()]];
      const refresh = vi.fn(async () => {
        const start = Date.now();
        const ok = (await a.lease.refresh(lease)).refreshed;
        if (ok) successes.push([start, Date.now()]);
        return ok;
      });
      const refresher = new LeaseRefresher({ refresh, ttlMs, intervalMs: 100 });
      refresher.start();
      await sleep(3 * ttlMs);
      const holder = await b.lease.holderOf(key);
      const checkedAt = Date.now();
      const contender = await b.lease.tryAcquire(key, { ttlMs, holder: 'intruder' });
      await refresher.stop();
      await a.lease.release(lease);
      if (contender.acquired) await b.lease.release(contender);
      // Longest span in which no refresh can have reached Redis (upper bound).
      const spans = successes.map(([start], k) => (successes[k + 1]?.[1] ?? checkedAt) - start);
      return {
        held: holder === lease.token,
        contender,
        lease,
        calls: refresh.mock.calls.length,
        aborted: refresher.signal.aborted,
        maxSpan: Math.max(...spans),
      };
    };
    // On a loaded 2-core box the process can stall longer than the TTL, and then losing the
    // lease is correct. Such a round must show a refresh-free span > TTL; only then retry.
    for (let attempt = 1; attempt <= 3; attempt++) {
      const r = await round();
      if (r.held) {
        expect(r.calls).toBeGreaterThan(3);
        expect(r.aborted).toBe(false);
        expect(r.contender).toEqual({ acquired: false, holder: r.lease.token });
        return;
      }
      expect(r.maxSpan, 'lease lost although refreshes reached Redis within every TTL').toBeGreaterThan(ttlMs);
    }
    expect.fail('every round stalled longer than the TTL; environment too loaded to judge L7');
  });

  it('L5/L7: when the lease is taken over, the refresher gives up and aborts its signal', async () => {
    const key = newSessionKey();
    const ttlMs = 2000;
    const lease = acquired(await a.lease.tryAcquire(key, { ttlMs, holder: 'paused' }));
    const onGiveUp = vi.fn();
    const refresher = new LeaseRefresher({
      refresh: async () => (await a.lease.refresh(lease)).refreshed,
      ttlMs,
      intervalMs: 100,
      onGiveUp,
    });
    // Another holder took the key (as after an expiry under a paused owner).
    await Promise.all(a.clients.map((c) => c.set(`lease:session:${key}`, 'other#1', 'PX', 30_000)));
    refresher.start();
    await vi.waitFor(() => expect(refresher.signal.aborted).toBe(true), { timeout: 10_000, interval: 50 });
    expect(onGiveUp).toHaveBeenCalledTimes(1);
    await refresher.stop();
    expect(await a.lease.holderOf(key)).toBe('other#1');
    await Promise.all(a.clients.map((c) => c.del(`lease:session:${key}`)));
  });
});
