// Quorum behaviour with our own redis-server nodes that we stop mid-test (SPEC L4, I3).
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LeaseUnavailableError } from '../../../lib/lease/index.js';
import { startRedis, type LocalProcess } from '../../../infra/local/processes.js';
import { acquired, leaseOn, newSessionKey, valuesOnNodes, type LeaseHarness } from './lease-test-support.js';

const TTL = 30_000;

/** Stops a node and waits until our client has noticed, so the next command fails fast. */
async function stopNode(node: LocalProcess, client: Redis): Promise<void> {
  const closed = client.status === 'ready' ? new Promise((r) => client.once('close', r)) : Promise.resolve();
  await node.stop();
  await closed;
}

describe('SessionLease quorum with nodes down', () => {
  let nodes: LocalProcess[];
  let h: LeaseHarness;
  let other: LeaseHarness;

  beforeEach(async () => {
    nodes = await Promise.all([startRedis(), startRedis(), startRedis()]);
    h = await leaseOn(nodes.map((n) => n.url));
    other = await leaseOn(nodes.map((n) => n.url));
  });
  afterEach(async () => {
    h.close();
    other.close();
    await Promise.all(nodes.map((n) => n.stop('SIGKILL')));
  });

  it('L4: with 1 of 3 nodes down, acquire, contention, refresh and release still work', async () => {
    const key = newSessionKey();
    await stopNode(nodes[0]!, h.clients[0]!);
    await stopNode(nodes[0]!, other.clients[0]!);
    const lease = acquired(await h.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' }));
    expect(await valuesOnNodes(h.clients.slice(1), key)).toEqual([lease.token, lease.token]);
    expect(await other.lease.tryAcquire(key, { ttlMs: TTL, holder: 'b' })).toEqual({ acquired: false, holder: lease.token });
    expect(await h.lease.refresh(lease)).toMatchObject({ refreshed: true });
    expect(await h.lease.release(lease)).toEqual({ released: true });
    expect(await valuesOnNodes(h.clients.slice(1), key)).toEqual([null, null]);
  });

  it('L4: a node failing after acquire does not lose the lease (refresh/release on the remaining majority)', async () => {
    const key = newSessionKey();
    const lease = acquired(await h.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' }));
    await stopNode(nodes[2]!, h.clients[2]!);
    expect(await h.lease.refresh(lease)).toMatchObject({ refreshed: true });
    expect(await h.lease.release(lease)).toEqual({ released: true });
  });

  it('L4: with 2 of 3 nodes down, tryAcquire throws LeaseUnavailableError in < 1 s and leaves no partial key', async () => {
    const key = newSessionKey();
    await stopNode(nodes[0]!, h.clients[0]!);
    await stopNode(nodes[1]!, h.clients[1]!);
    const started = performance.now();
    const err = await h.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' }).then(
      () => null,
      (e: unknown) => e,
    );
    const elapsed = performance.now() - started;
    expect(err).toBeInstanceOf(LeaseUnavailableError);
    expect((err as LeaseUnavailableError).nodeErrors).toHaveLength(2);
    expect(elapsed).toBeLessThan(1000);
    // The one live node accepted our SET; it is undone (in the background when its vote came after the decision).
    await vi.waitFor(async () => expect(await h.clients[2]!.keys('lease:session:*')).toEqual([]), { timeout: 5_000, interval: 20 });
  });

  it('L4: with 2 of 3 nodes down, refresh and release report no_quorum instead of throwing', async () => {
    const key = newSessionKey();
    const lease = acquired(await h.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' }));
    await stopNode(nodes[0]!, h.clients[0]!);
    await stopNode(nodes[1]!, h.clients[1]!);
    expect(await h.lease.refresh(lease)).toEqual({ refreshed: false, reason: 'no_quorum' });
    expect(await h.lease.release(lease)).toEqual({ released: false, reason: 'no_quorum' });
  });

  it('L4: with 1 node down and the key held by another on the rest, the result is held-by-other, not unavailable', async () => {
    const key = newSessionKey();
    const held = acquired(await other.lease.tryAcquire(key, { ttlMs: TTL, holder: 'b' }));
    await stopNode(nodes[1]!, h.clients[1]!);
    expect(await h.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' })).toEqual({ acquired: false, holder: held.token });
  });

  it('L4: with every node down, holderOf throws LeaseUnavailableError rather than claiming the lease is free', async () => {
    for (let i = 0; i < 3; i++) await stopNode(nodes[i]!, h.clients[i]!);
    await expect(h.lease.holderOf(newSessionKey())).rejects.toBeInstanceOf(LeaseUnavailableError);
  });

  it('L4: a restarted node rejoins the quorum', async () => {
    const key = newSessionKey();
    const port = nodes[0]!.port;
    await stopNode(nodes[0]!, h.clients[0]!);
    await stopNode(nodes[1]!, h.clients[1]!);
    await expect(h.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' })).rejects.toBeInstanceOf(LeaseUnavailableError);
    nodes[0] = await startRedis(port);
    await new Promise<void>((resolve) => (h.clients[0]!.status === 'ready' ? resolve() : h.clients[0]!.once('ready', () => resolve())));
    const lease = acquired(await h.lease.tryAcquire(key, { ttlMs: TTL, holder: 'a' }));
    expect(await h.lease.release(lease)).toEqual({ released: true });
  });
});
