// The per-tenant byte budget (issue 35 item 5) through the real handler, on the test stack's Redis:
// request body bytes per second per tenant, beside the request rate. Over it: 429 rate_limited
// naming the limit, with Retry-After; another tenant and a body-less request are unaffected.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import { Runtime, httpDeps } from '../../../lib/runtime.js';
import { gatewayEvent } from '../../support/in-process-api.js';

const BYTES_PER_SECOND = 30_000;
// A window of one second: the largest body accepted fits the budget once.
const rt = new Runtime({
  env: {
    REDIS_URLS: process.env.REDIS_URLS!,
    DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT!,
    TABLE_NAME: process.env.TABLE_NAME!,
    RATE_LIMIT_REQUESTS_PER_SECOND: '0',
    RATE_LIMIT_COMPRESSIONS_PER_MINUTE: '0',
    RATE_LIMIT_BODY_BYTES_PER_SECOND: String(BYTES_PER_SECOND),
    MAX_BODY_BYTES: String(BYTES_PER_SECOND),
  },
});
afterAll(() => rt.close());

const keys: Record<string, string> = {};
beforeAll(async () => {
  const { dynamo } = await rt.core();
  const apiKeys = new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! });
  for (const t of ['a', 'b']) keys[t] = (await apiKeys.create(`bytes-${t}-${randomUUID().slice(0, 8)}`)).key;
});

/** The answer's body, as the assertions read it. */
type Answer = { error: { code: string; message: string }; session: { sessionId: string }; [field: string]: unknown };

async function call(tenant: string, method: string, path: string, body?: unknown) {
  const res = await handleHttpRequest(gatewayEvent(keys[tenant]!, method, path, body), await httpDeps(rt), { requestId: randomUUID() });
  return { status: res.statusCode, headers: res.headers ?? {}, body: res.body ? (JSON.parse(res.body) as Answer) : ({} as Answer) };
}

async function newSession(tenant: string): Promise<string> {
  return (await call(tenant, 'POST', '/sessions', {})).body.session.sessionId;
}

/** An append of about 10.5 KB: any split of seven over two one-second windows puts four (42 KB) in one. */
const bigAppend = () => ({ messages: [{ role: 'user', content: 'x'.repeat(10_500) }] });

describe('per-tenant byte budget (issue 35 item 5)', () => {
  it("F2: a tenant over its request body bytes per second gets 429 rate_limited naming the limit, with Retry-After; another tenant's append and its own body-less reads go through", async () => {
    const [aId, bId] = [await newSession('a'), await newSession('b')];
    const flood = await Promise.all(Array.from({ length: 7 }, () => call('a', 'POST', `/sessions/${aId}/messages`, bigAppend())));
    const limited = flood.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(flood.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    for (const r of limited) {
      expect(r.body.error.code).toBe('rate_limited');
      expect(r.body.error.message).toMatch(/request body bytes per second/);
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    // Bytes, not requests: a read carries no body and is not charged.
    expect((await call('a', 'GET', `/sessions/${aId}`)).status).toBe(200);
    // Another tenant's budget is its own.
    expect((await call('b', 'POST', `/sessions/${bId}/messages`, bigAppend())).status).toBe(200);
  });
});
