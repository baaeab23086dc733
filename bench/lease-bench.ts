// Lease acquire / refresh / release vs bare Redis round trips on the same nodes.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { createRedisClients, waitForRedis } from '../lib/aws-clients.js';
import { SessionLease } from '../lib/lease/index.js';
import { compare, timeIt, type Comparison } from './stats.js';

export interface LeaseBenchResult {
  nodes: number;
  iterations: number;
  acquireVsSetNx: Comparison;
  refreshVsGet: Comparison;
  releaseVsGet: Comparison;
}

const onAll = (clients: Redis[], fn: (c: Redis) => Promise<unknown>) => Promise.all(clients.map(fn));

export async function benchLease(urls: readonly string[], iterations: number): Promise<LeaseBenchResult> {
  const clients = createRedisClients(urls);
  await waitForRedis(clients);
  try {
    const lease = new SessionLease({ clients, keyPrefix: 'bench-lease:' });
    const samples = {
      acq: [] as number[],
      setnx: [] as number[],
      ref: [] as number[],
      get: [] as number[],
      rel: [] as number[],
      get2: [] as number[],
    };
    const warmup = 20;
    for (let i = 0; i < iterations + warmup; i++) {
      const key = `bench/${randomUUID()}`;
      const bareKey = `bench-bare:${randomUUID()}`;
      const leaseSide = async () => {
        let acquired: Awaited<ReturnType<SessionLease['tryAcquire']>> | undefined;
        const a = await timeIt(async () => {
          acquired = await lease.tryAcquire(key, { ttlMs: 10_000, holder: 'bench' });
        });
        if (!acquired?.acquired) throw new Error('bench: uncontended acquire failed');
        const l = acquired;
        const r = await timeIt(() => lease.refresh(l, 10_000));
        const d = await timeIt(() => lease.release(l));
        return [a, r, d] as const;
      };
      const bareSide = async () => {
        const s = await timeIt(() => onAll(clients, (c) => c.set(bareKey, 'x', 'PX', 10_000, 'NX')));
        const g = await timeIt(() => onAll(clients, (c) => c.get(bareKey)));
        const g2 = await timeIt(() => onAll(clients, (c) => c.get(bareKey)));
        await onAll(clients, (c) => c.del(bareKey));
        return [s, g, g2] as const;
      };
      // Interleave, alternating which side goes first.
      const [l, b] =
        i % 2 === 0 ? [await leaseSide(), await bareSide()] : await bareSide().then(async (b2) => [await leaseSide(), b2] as const);
      if (i < warmup) continue;
      samples.acq.push(l[0]);
      samples.ref.push(l[1]);
      samples.rel.push(l[2]);
      samples.setnx.push(b[0]);
      samples.get.push(b[1]);
      samples.get2.push(b[2]);
    }
    const result: LeaseBenchResult = {
      nodes: urls.length,
      iterations,
      acquireVsSetNx: compare(samples.acq, samples.setnx),
      refreshVsGet: compare(samples.ref, samples.get),
      releaseVsGet: compare(samples.rel, samples.get2),
    };
    return result;
  } finally {
    for (const c of clients) c.disconnect();
  }
}
