// L4 with hung nodes (found by the adversarial pass: SIGSTOP of two of `npm start`'s three Redis
// nodes during a held begin): a node that stores our SET but whose reply never comes in time
// counts as failed, and the round answers "unavailable" (503 lease_unavailable, nothing applied).
// Its SET must be undone too: left alone, two such nodes are a quorum holding a lease nobody
// owns, and every begin is told `locked` until its TTL lapses.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Redis } from 'ioredis';
import { createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { LeaseUnavailableError, SessionLease } from '../../../lib/lease/index.js';
import { DelayingProxy } from '../../support/delaying-proxy.js';
import { newSessionKey, sharedRedisUrls, valuesOnNodes } from './lease-test-support.js';

let proxies: DelayingProxy[];
/** The lease's clients: node 0 direct, nodes 1 and 2 through proxies. */
let viaProxy: Redis[];
let direct: Redis[];

beforeAll(async () => {
  const urls = sharedRedisUrls();
  proxies = await Promise.all([DelayingProxy.start(urls[1]!), DelayingProxy.start(urls[2]!)]);
  viaProxy = createRedisClients([urls[0]!, proxies[0]!.url, proxies[1]!.url]);
  direct = createRedisClients(urls);
  await Promise.all([waitForRedis(viaProxy), waitForRedis(direct)]);
});

afterAll(async () => {
  proxies.forEach((p) => p.release());
  [...viaProxy, ...direct].forEach((c) => c.disconnect());
  await Promise.all(proxies.map((p) => p.close()));
});

describe('hung nodes', () => {
  it('L4: a round answered "unavailable" because two nodes stored our SET but replied too late leaves no lease behind on them', async () => {
    const key = newSessionKey();
    const lease = new SessionLease({ clients: viaProxy });
    proxies.forEach((p) => p.hold());
    await expect(lease.tryAcquire(key, { ttlMs: 60_000, holder: 'hung' })).rejects.toBeInstanceOf(LeaseUnavailableError);
    // Both nodes did store it (their replies are what is held) ...
    expect(proxies.every((p) => p.heldReplies > 0)).toBe(true);
    // ... and the undo sent behind it removes it at once, not when the 60 s TTL lapses.
    await vi.waitFor(async () => expect(await valuesOnNodes(direct, key)).toEqual([null, null, null]), { timeout: 3_000, interval: 50 });
    proxies.forEach((p) => p.release());
    const next = new SessionLease({ clients: direct });
    const won = await next.tryAcquire(key, { ttlMs: 5_000, holder: 'next' });
    expect(won.acquired).toBe(true);
    if (won.acquired) await next.release(won);
  }, 20_000);
});
