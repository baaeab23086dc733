// What a newcomer meets following the README (issue 34), through the real handler in-process: an
// append to a conversation that does not exist says that PUT creates it; a format mismatch says
// how to recover; a key sent without `Bearer` is a 401 with the challenge; a 429 names the limit
// that was hit and the setting that raises it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { rateLimited } from '../../../lib/api/tenant-limits.js';
import { httpDeps } from '../../../lib/runtime.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';

const rt = testStackRuntime();
let key: string;
let deps: ApiDeps;

beforeAll(async () => {
  const { dynamo } = await rt.core();
  key = (await new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! }).create(`hints-${randomUUID().slice(0, 8)}`)).key;
  deps = await httpDeps(rt);
});
afterAll(() => rt.close());

async function send(method: string, path: string, body?: unknown, headers?: Record<string, string>) {
  const event = gatewayEvent(key, method, path, body);
  if (headers) Object.assign(event.headers, headers);
  const res = await handleHttpRequest(event, deps, { requestId: randomUUID() });
  return { status: res.statusCode, headers: res.headers ?? {}, body: JSON.parse(res.body ?? 'null') as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

describe('error answers that say what to do next (issue 34)', () => {
  it('K1: an append to a conversation that does not exist is 404 saying that PUT creates it', async () => {
    const id = `missing.${randomUUID().slice(0, 8)}`;
    const r = await send('POST', `/conversations/${id}/messages`, { messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ code: 'not_found', message: `conversation ${id} not found; PUT /conversations/${id} creates it` });
  });

  it('K1: a PUT in the other format is 409 format_mismatch saying to use another id or delete it first', async () => {
    const id = `fmt.${randomUUID().slice(0, 8)}`;
    expect((await send('PUT', `/conversations/${id}`, { format: 'chat' })).status).toBe(201);
    const r = await send('PUT', `/conversations/${id}`, { format: 'responses' });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('format_mismatch');
    expect(r.body.error.message).toBe(
      `conversation ${id} holds chat items, not responses: a conversation keeps the format it was created with; ` +
        `use another conversation id for responses items, or DELETE /conversations/${id} first to create it again`,
    );
  });

  it('F2: a key sent without the word Bearer is 401 with WWW-Authenticate: Bearer, saying the expected form', async () => {
    const r = await send('GET', '/conversations', undefined, { authorization: key });
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toBe('Bearer');
    expect(r.body.error.message).toContain('expected "Bearer <api key>"');
  });

  it('F2: a 429 rate_limited names the limit that was hit and the setting that raises it', () => {
    const rps = rateLimited('request', 300, 50);
    expect(rps.message).toBe(
      'this tenant is over its limit of 50 requests per second (RATE_LIMIT_REQUESTS_PER_SECOND); retry after 1 s, or raise RATE_LIMIT_REQUESTS_PER_SECOND (0 turns it off)',
    );
    expect(rps.details).toEqual({ limit: 'requests_per_second', setting: 'RATE_LIMIT_REQUESTS_PER_SECOND', value: 50 });
    expect(rps.headers['retry-after']).toBe('1');
    const cpm = rateLimited('compress', 42_000, 60);
    expect(cpm.message).toContain('limit of 60 compressions per minute (RATE_LIMIT_COMPRESSIONS_PER_MINUTE); retry after 42 s');
    expect(cpm.details).toEqual({ limit: 'compressions_per_minute', setting: 'RATE_LIMIT_COMPRESSIONS_PER_MINUTE', value: 60 });
  });
});
