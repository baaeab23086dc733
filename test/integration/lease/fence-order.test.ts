// The fence is issued after the SET NX quorum is won; a holder that pauses in nextFence
// longer than its TTL must not come back with a lease (SPEC L6, L3, L4, I3).
import type { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { LeaseUnavailableError, type FenceIssuer } from '../../../lib/lease/index.js';
import { startRedis } from '../../../infra/local/processes.js';
import { acquireWhenFree, CountingFenceIssuer, leaseOn, newSessionKey, sharedRedisUrls, valuesOnNodes } from './lease-test-support.js';

/** Takes fences from a shared counter, but only once the test opens the gate (a paused holder). */
class GatedFenceIssuer implements FenceIssuer {
  readonly issued: number[] = [];
  wasCalled = false;
  open: () => void = () => undefined;
  private readonly gate = new Promise<void>((resolve) => (this.open = resolve));

  constructor(private readonly counter: FenceIssuer) {}

  async nextFence(sessionKey: string): Promise<number> {
    this.wasCalled = true;
    await this.gate;
    const fence = await this.counter.nextFence(sessionKey);
    this.issued.push(fence);
    return fence;
  }
}

/** Stops a node and waits until our client has noticed, so the next command fails fast. */
async function closedAfter(stop: () => Promise<void>, client: Redis): Promise<void> {
  const closed = client.status === 'ready' ? new Promise((r) => client.once('close', r)) : Promise.resolve();
  await stop();
  await closed;
}

describe('SessionLease fence issued after the quorum (paused holder)', () => {
  it('L6: a holder paused in nextFence past its TTL gets acquired:false and leaves the new holder untouched', async () => {
    const counter = new CountingFenceIssuer();
    const gated = new GatedFenceIssuer(counter);
    const a = await leaseOn(sharedRedisUrls(), gated);
    const b = await leaseOn(sharedRedisUrls(), counter);
    try {
      const key = newSessionKey();
      const pending = a.lease.tryAcquire(key, { ttlMs: 300, holder: 'paused' });
      // A won SET NX and is now stuck issuing its fence; wait until its key expires and B takes it.
      await vi.waitFor(() => expect(gated.wasCalled).toBe(true), { timeout: 10_000, interval: 10 });
      const next = await acquireWhenFree(b.lease, key, 'next');
      gated.open();
      const late = await pending;

      // The order problem is real: the paused holder's fence is newer than the live holder's.
      expect(gated.issued).toHaveLength(1);
      expect(gated.issued[0]).toBeGreaterThan(next.fence);
      expect(late).toEqual({ acquired: false, holder: next.token });
      expect(await valuesOnNodes(b.clients, key)).toEqual([next.token, next.token, next.token]);
      expect(await b.lease.refresh(next)).toMatchObject({ refreshed: true });
      expect(await b.lease.release(next)).toEqual({ released: true });
    } finally {
      a.close();
      b.close();
    }
  });

  it('L6/L4/I3: losing the quorum while the fence is issued throws LeaseUnavailableError and undoes the key', async () => {
    const nodes = await Promise.all([startRedis(), startRedis(), startRedis()]);
    const gated = new GatedFenceIssuer(new CountingFenceIssuer());
    const a = await leaseOn(
      nodes.map((n) => n.url),
      gated,
    );
    try {
      const key = newSessionKey();
      const pending = a.lease.tryAcquire(key, { ttlMs: 30_000, holder: 'a' });
      pending.catch(() => undefined);
      await vi.waitFor(() => expect(gated.wasCalled).toBe(true), { timeout: 10_000, interval: 10 });
      await closedAfter(() => nodes[0]!.stop(), a.clients[0]!);
      await closedAfter(() => nodes[1]!.stop(), a.clients[1]!);
      gated.open();
      const err = await pending.then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(LeaseUnavailableError);
      expect((err as LeaseUnavailableError).nodeErrors.length).toBeGreaterThanOrEqual(2);
      // The one live node held our token; the token-checked release removed it.
      expect(await a.clients[2]!.get(`lease:session:${key}`)).toBeNull();
    } finally {
      a.close();
      await Promise.all(nodes.map((n) => n.stop('SIGKILL')));
    }
  });
});
