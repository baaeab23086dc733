// Lease conditions that only a slow node or a jumping clock exercise (issue 22 finding 6):
// L3, the late undo of a lost round stays token-checked (a delaying proxy holds one node's
// SET reply until our key expired there and another holder took it); L2, tryAcquire never
// returns a lease that expired during its own round (an injected clock jumps past the TTL).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Redis } from 'ioredis';
import { createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { SessionLease } from '../../../lib/lease/index.js';
import { DelayingProxy } from '../../support/delaying-proxy.js';
import { newSessionKey, sharedRedisUrls, valuesOnNodes } from './lease-test-support.js';

let proxy: DelayingProxy;
/** The lease's clients: nodes 0 and 1 direct, node 2 through the proxy. */
let viaProxy: Redis[];
/** Every node, direct. */
let direct: Redis[];

beforeAll(async () => {
  const urls = sharedRedisUrls();
  proxy = await DelayingProxy.start(urls[2]!);
  viaProxy = createRedisClients([urls[0]!, urls[1]!, proxy.url]);
  direct = createRedisClients(urls);
  await Promise.all([waitForRedis(viaProxy), waitForRedis(direct)]);
});

afterAll(async () => {
  proxy.release();
  [...viaProxy, ...direct].forEach((c) => c.disconnect());
  await proxy.close();
});

const isSet = (chunk: Buffer) => /\bSET\b/i.test(chunk.toString('latin1'));

describe('late replies and clock jumps', () => {
  it("L3: a node whose OK to our SET arrives after our key expired there and another holder took it keeps the new holder's key", async () => {
    const key = newSessionKey();
    const full = `lease:session:${key}`;
    // Holder X has nodes 0 and 1, so our round is lost; node 2 is free and stores our SET.
    await Promise.all(direct.slice(0, 2).map((c) => c.set(full, 'X#1', 'PX', 10_000)));
    const lease = new SessionLease({ clients: viaProxy });
    proxy.hold();
    const setReached = proxy.nextRequest(isSet);
    const result = await lease.tryAcquire(key, { ttlMs: 150, holder: 'late' });
    await setReached;
    expect(result).toEqual({ acquired: false, holder: 'X#1' });
    expect(proxy.heldReplies).toBeGreaterThan(0); // node 2's "OK" has not reached us yet

    // Our key expires on node 2 and holder B takes it there.
    await vi.waitFor(async () => expect(await direct[2]!.get(full)).toBeNull(), { timeout: 5_000, interval: 20 });
    await direct[2]!.set(full, 'B#1', 'PX', 10_000);

    // Now node 2's OK arrives: the lease undoes its SET there, and that undo must check the token.
    const undoSent = proxy.nextRequest();
    proxy.release();
    await undoSent;
    await proxy.nextReply();
    expect(await valuesOnNodes(direct, key)).toEqual(['X#1', 'X#1', 'B#1']);
    await Promise.all(direct.map((c) => c.del(full)));
  });

  it('L2: tryAcquire never returns a lease that expired during its own round (a clock jump past the TTL)', async () => {
    const key = newSessionKey();
    const ttlMs = 1_000;
    const start = Date.now();
    let reads = 0;
    // The first reading starts the round; every later one is past the TTL (a paused process, a clock step).
    const now = () => (reads++ === 0 ? start : start + ttlMs + 1);
    const lease = new SessionLease({ clients: direct, now });
    const result = await lease.tryAcquire(key, { ttlMs, holder: 'jumped' });
    expect(result.acquired).toBe(false);
    expect(reads).toBeGreaterThanOrEqual(2);
    // A majority said yes, but what it said yes to is already gone: nothing of ours is left behind.
    expect(await valuesOnNodes(direct, key)).toEqual([null, null, null]);
    // With a clock that stays put the same round wins.
    const steady = new SessionLease({ clients: direct, now: () => Date.now() });
    const won = await steady.tryAcquire(key, { ttlMs, holder: 'steady' });
    expect(won.acquired).toBe(true);
    if (won.acquired) await steady.release(won);
  });
});
