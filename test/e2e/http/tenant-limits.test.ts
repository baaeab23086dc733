// Per-tenant limits over real HTTP (serverless-offline) on real Redis nodes this file owns
// (issue 22 finding 5): over a limit 429 rate_limited with Retry-After, another tenant
// unaffected, and with a counting node killed the limit fails open for reads and appends
// while a compress keeps its own lease rule (C2).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type LocalProcess } from '../../../infra/local/processes.js';
import { nodeOf } from '../../../lib/api/tenant-limits.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';
import { apiClient, type Api, type ApiResponse } from './api-client.js';
import { appendAll, createSession, turns } from './session-helpers.js';

const REQUESTS_PER_SECOND = 6;
const COMPRESSIONS_PER_MINUTE = 2;
let nodes: LocalProcess[] = [];
let service: LocalService;

async function tenantApi(prefix: string): Promise<{ tenant: string; api: Api }> {
  const tenant = `${prefix}-${randomUUID().slice(0, 8)}`;
  return { tenant, api: apiClient(service.baseUrl, await service.createApiKey(tenant)) };
}

/** A tenant whose counters live on node `node` (tenants are spread over the nodes by a hash of their id). */
async function tenantOnNode(prefix: string, node: number): Promise<{ tenant: string; api: Api }> {
  for (;;) {
    const tenant = `${prefix}-${randomUUID().slice(0, 8)}`;
    if (nodeOf(tenant, nodes.length) === node) return { tenant, api: apiClient(service.baseUrl, await service.createApiKey(tenant)) };
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const codes = (rs: ApiResponse[]) => rs.map((r) => r.status);

beforeAll(async () => {
  nodes = await Promise.all([startRedis(), startRedis(), startRedis()]);
  service = await startLocalService({
    afterTurn: false,
    env: {
      REDIS_URLS: nodes.map((n) => n.url).join(','),
      RATE_LIMIT_REQUESTS_PER_SECOND: String(REQUESTS_PER_SECOND),
      RATE_LIMIT_COMPRESSIONS_PER_MINUTE: String(COMPRESSIONS_PER_MINUTE),
    },
  });
}, 240_000);

afterAll(async () => {
  await service?.stop();
  await Promise.all(nodes.filter((n) => !n.exited).map((n) => n.stop('SIGKILL')));
});

describe('per-tenant limits (issue 22 finding 5)', () => {
  it("F2: a burst over a tenant's requests per second is 429 rate_limited with Retry-After; another tenant is unaffected", async () => {
    const a = await tenantApi('noisy');
    const b = await tenantApi('quiet');
    const [aId, bId] = [await createSession(a.api), await createSession(b.api)];
    await pause(1100); // a fresh one-second window for both
    const [noisy, quiet] = await Promise.all([
      Promise.all(Array.from({ length: 4 * REQUESTS_PER_SECOND }, () => a.api('GET', `/sessions/${aId}`))),
      Promise.all(Array.from({ length: REQUESTS_PER_SECOND - 2 }, () => b.api('GET', `/sessions/${bId}`))),
    ]);
    const limited = noisy.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(codes(noisy).every((s) => s === 200 || s === 429)).toBe(true);
    for (const r of limited) {
      expect(r.body.error.code).toBe('rate_limited');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    expect(codes(quiet)).toEqual(quiet.map(() => 200));
    // A new second, a new allowance.
    await pause(1100);
    expect((await a.api('GET', `/sessions/${aId}`)).status).toBe(200);
  });

  it("F2: the compressions per minute of one tenant are counted apart from another's; over them 429 with Retry-After", async () => {
    const a = await tenantApi('compress-a');
    const b = await tenantApi('compress-b');
    const aId = await createSession(a.api);
    await appendAll(a.api, aId, turns(0, 6));
    const bId = await createSession(b.api);
    await appendAll(b.api, bId, turns(0, 6));
    await pause(1100);
    const body = { mode: 'in_place', keepLast: 2 };
    for (let i = 0; i < COMPRESSIONS_PER_MINUTE; i++) expect((await a.api('POST', `/sessions/${aId}/compress`, { body })).status).toBe(200);
    const over = await a.api('POST', `/sessions/${aId}/compress`, { body });
    expect([over.status, over.body.error.code]).toEqual([429, 'rate_limited']);
    const retryAfter = Number(over.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Reads and appends of the same tenant are not compressions.
    expect((await a.api('GET', `/sessions/${aId}/messages`)).status).toBe(200);
    // The other tenant compresses as usual.
    expect((await b.api('POST', `/sessions/${bId}/compress`, { body })).status).toBe(200);
  });

  it('F2 C2: with the node counting a tenant killed (by PID), its reads and appends fail open; compress keeps its lease rule', async () => {
    const victim = 0;
    const t = await tenantOnNode('failopen', victim);
    const id = await createSession(t.api);
    await appendAll(t.api, id, turns(0, 4));
    await nodes[victim]!.stop('SIGKILL');
    // More than the limit, at once: nothing counts them, so nothing refuses them.
    const reads = await Promise.all(Array.from({ length: 3 * REQUESTS_PER_SECOND }, () => t.api('GET', `/sessions/${id}`)));
    expect(codes(reads)).toEqual(reads.map(() => 200));
    const appended = await t.api('POST', `/sessions/${id}/messages`, { body: { messages: turns(4, 2) } });
    expect(appended.status).toBe(200);
    // Two of three lease nodes still make a quorum: the compress runs (unlimited while its counter is down).
    const compressed = await t.api('POST', `/sessions/${id}/compress`, { body: { mode: 'in_place', keepLast: 2 } });
    expect(compressed.status).toBe(200);
    // One node left: no lease quorum, so the compress fails closed (C2) while reads still answer.
    await nodes[1]!.stop('SIGKILL');
    const refused = await t.api('POST', `/sessions/${id}/compress`, { body: { mode: 'in_place' } });
    expect([refused.status, refused.body.error.code]).toEqual([503, 'lease_unavailable']);
    expect((await t.api('GET', `/sessions/${id}/messages`)).status).toBe(200);
    expect((await t.api('POST', `/sessions/${id}/messages`, { body: { messages: turns(6, 2) } })).status).toBe(200);
  });
});
