// Round trips of HTTP requests through the real composition root (lib/runtime.ts httpDeps) and
// handler (lib/api/http-app.ts), counted on the runtime's own clients (SPEC P2, issue 9).
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import { httpDeps } from '../../../lib/runtime.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { RoundTrips } from '../../support/round-trips.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';

// The coordination path alone: with per-tenant limits on, every request first spends one call on its
// tenant's counter node (README, Tenant limits), which test/e2e/http/tenant-limits.test.ts covers.
const rt = testStackRuntime();
const tenantId = `rt-${randomUUID().slice(0, 8)}`;
let key: string;
let trips: RoundTrips;

beforeAll(async () => {
  const { dynamo, redis } = await rt.core();
  key = (await new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! }).create(tenantId)).key;
  trips = new RoundTrips().watchDynamo(dynamo).watchRedis(redis);
});
afterAll(async () => {
  trips.restore();
  await rt.close();
});

function request(method: string, path: string, body?: unknown, query?: Record<string, string>): APIGatewayProxyEventV2 {
  return gatewayEvent(key, method, path, body, query);
}

async function seeded(n: number) {
  const { store } = await rt.core();
  const r = await store.createSession({ tenantId });
  if (r.replayed) throw new Error('unexpected replay');
  const ref = { tenantId, sessionId: r.session.sessionId };
  const items = Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i}` }));
  for (let i = 0; i < n; i += 98) await store.appendItems(ref, { prepare: asIs(items.slice(i, i + 98)) });
  return ref;
}

describe('HTTP round trips (P2, issue 9)', () => {
  it('P2: a losing compress over HTTP, with the API key cached in the container, costs one Redis round and no DynamoDB call', async () => {
    const deps = await httpDeps(rt);
    const ref = await seeded(1000);
    const path = `/sessions/${ref.sessionId}/compress`;
    // Warm the container: the first request reads the API key once.
    expect((await handleHttpRequest(request('GET', `/sessions/${ref.sessionId}`), deps, { requestId: 'warm' })).statusCode).toBe(200);
    const { lease } = await rt.core();
    const held = await lease.tryAcquire(sessionKey(ref), { ttlMs: 30_000, holder: 'someone-else' });
    expect(held.acquired).toBe(true);
    try {
      const { result, calls, phases } = await trips.during(() =>
        handleHttpRequest(request('POST', path, { mode: 'rotate' }), deps, { requestId: 'loser' }),
      );
      expect(result.statusCode).toBe(200);
      expect(JSON.parse(result.body!)).toMatchObject({ outcome: 'skipped', reason: 'locked', holder: held.acquired ? held.token : '' });
      expect(JSON.parse(result.body!)).not.toHaveProperty('messages');
      expect(calls.map((c) => `${c.kind}:${c.op}`)).toEqual(['redis:set', 'redis:set', 'redis:set']);
      expect(phases).toMatchObject({ redisRounds: 1, dynamoSteps: 0 });
    } finally {
      if (held.acquired) await lease.release(held);
    }
  });

  it('issue 9: GET messages reads the session record once (one GetItem, one Query)', async () => {
    const deps = await httpDeps(rt);
    const ref = await seeded(30);
    const { result, calls } = await trips.during(() =>
      handleHttpRequest(request('GET', `/sessions/${ref.sessionId}/messages`, undefined, { limit: '50' }), deps, { requestId: 'read' }),
    );
    expect(result.statusCode).toBe(200);
    expect(JSON.parse(result.body!).messages).toHaveLength(30);
    expect(calls.map((c) => c.op)).toEqual(['GetItemCommand', 'QueryCommand']);
  });

  it('P5/A3: an idempotent append in a warm container is one transaction; a cold one reads the record and the key side by side first', async () => {
    const deps = await httpDeps(rt);
    const ref = await seeded(2);
    const append = () => {
      const req = request('POST', `/sessions/${ref.sessionId}/messages`, { messages: [{ role: 'user', content: 'hi' }] });
      req.headers['idempotency-key'] = `k-${randomUUID()}`;
      return req;
    };
    const steps = (phases: { dynamo: { op: string }[][] }) =>
      phases.dynamo.map((step) =>
        step
          .map((c) => c.op)
          .sort()
          .join(' ∥ '),
      );
    // This container created and filled the session: it knows the record.
    const warm = await trips.during(() => handleHttpRequest(append(), deps, { requestId: 'warm' }));
    expect(warm.result.statusCode).toBe(200);
    expect(steps(warm.phases)).toEqual(['TransactWriteItemsCommand']);
    (await rt.core()).store['table'].records.drop(`T#${tenantId}#S#${ref.sessionId}`);
    const cold = await trips.during(() => handleHttpRequest(append(), deps, { requestId: 'cold' }));
    expect(cold.result.statusCode).toBe(200);
    expect(steps(cold.phases)).toEqual(['GetItemCommand ∥ GetItemCommand', 'TransactWriteItemsCommand']);
  });
});
