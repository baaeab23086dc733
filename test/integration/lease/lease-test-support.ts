// Shared helpers for lease integration tests: real ioredis clients (via lib/aws-clients.ts).
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, vi } from 'vitest';
import { createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { SessionLease, type AcquireResult, type Lease, type LeaseApi } from '../../../lib/lease/index.js';

export function sharedRedisUrls(): string[] {
  const urls = process.env.REDIS_URLS?.split(',').filter(Boolean) ?? [];
  if (urls.length === 0) throw new Error('REDIS_URLS not set: run through test/vitest.config.ts');
  return urls;
}

export function newSessionKey(): string {
  return `tenant-${randomUUID()}/session-${randomUUID()}`;
}

export interface LeaseHarness {
  lease: SessionLease;
  clients: Redis[];
  close(): void;
}

/** A SessionLease with its own connections (independent, like another Lambda container). */
export async function leaseOn(urls: readonly string[]): Promise<LeaseHarness> {
  const clients = createRedisClients(urls);
  await waitForRedis(clients);
  return {
    lease: new SessionLease({ clients }),
    clients,
    close: () => clients.forEach((c) => c.disconnect()),
  };
}

/**
 * Two SessionLeases on the shared nodes (two "containers"), opened in beforeAll and
 * closed in afterAll of the calling suite. The harnesses are filled in place, so a suite can hold them
 * from its definition on and use them in its tests.
 */
export function leasePairForSuite(): [LeaseHarness, LeaseHarness] {
  const a = {} as LeaseHarness;
  const b = {} as LeaseHarness;
  beforeAll(async () => {
    Object.assign(a, await leaseOn(sharedRedisUrls()));
    Object.assign(b, await leaseOn(sharedRedisUrls()));
  });
  afterAll(() => {
    a.close();
    b.close();
  });
  return [a, b];
}

/** Narrows an acquire result to the lease, failing the test when it was refused. */
export function acquired(r: AcquireResult): Lease {
  if (!r.acquired) throw new Error(`expected acquired, held by ${r.holder}`);
  return r;
}

/** The raw value of the lease key on every node (null where absent). */
export async function valuesOnNodes(clients: readonly Redis[], sessionKey: string): Promise<(string | null)[]> {
  return Promise.all(clients.map((c) => c.get(`lease:session:${sessionKey}`)));
}

/** Polls tryAcquire until the key is free (a held lease expires) and returns the new lease. */
export async function acquireWhenFree(lease: LeaseApi, key: string, holder: string, ttlMs = 30_000): Promise<Lease> {
  let won: Lease | undefined;
  await vi.waitFor(
    async () => {
      const r = await lease.tryAcquire(key, { ttlMs, holder });
      expect(r.acquired).toBe(true);
      won = acquired(r);
    },
    { timeout: 10_000, interval: 50 },
  );
  return won!;
}
