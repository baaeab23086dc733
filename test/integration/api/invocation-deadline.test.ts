// Defect (adversarial pass 4): with DynamoDB Local SIGSTOPped for 12-14 s under `npm start`, an
// append whose rounds lost races to the stalled writes resuming, then stalled again, ran past the
// http function's 29 s timeout (APPEND_DEADLINE_MS is checked only between rounds): middy's timeout
// answered an opaque 500 `{"message":"Internal Server Error"}` for a write that may have landed.
// The API now answers before the invocation's end: 503 `outcome_unknown` for a write (F1, README
// "Writes DynamoDB did not confirm"), 503 `unavailable` for a read.
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { ANSWER_MARGIN_MS } from '../../../lib/api/http-app.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import { httpDeps } from '../../../lib/runtime.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';

const rt = testStackRuntime();
const tenantId = `dl-${randomUUID().slice(0, 8)}`;
let key: string;

/** DynamoDB stalled for the commands `stalled` names: they reach it only once `resume()` is called. */
let stalled: (command: string) => boolean = () => false;
let resume: () => void = () => undefined;

beforeAll(async () => {
  const { dynamo } = await rt.core();
  key = (await new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! }).create(tenantId)).key;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (stalled(context.commandName ?? '')) await new Promise<void>((r) => (resume = r));
      return next(args);
    },
    { step: 'initialize', name: 'adversarialStall' },
  );
});
afterAll(async () => {
  resume();
  await rt.close();
});

function request(method: string, path: string, body?: unknown, query?: Record<string, string>): APIGatewayProxyEventV2 {
  return gatewayEvent(key, method, path, body, query);
}

/** An invocation with `ms` left; the stalled call is let through well after that (or the test would hang). */
function invocation(ms: number) {
  const end = Date.now() + ms;
  return { requestId: randomUUID(), remainingTimeMs: () => end - Date.now() };
}

describe('answers before the invocation times out (F1; found by the adversarial pass)', () => {
  it('F1: a write still waiting on the store when the invocation ends answers 503 outcome_unknown; it may land later', async () => {
    const deps = await httpDeps(rt);
    const created = await handleHttpRequest(request('POST', '/sessions', {}), deps, { requestId: 'create' });
    const sessionId = (JSON.parse(created.body!) as { session: { sessionId: string } }).session.sessionId;
    stalled = (c) => c === 'TransactWriteItemsCommand';
    const letThrough = setTimeout(() => resume(), 20_000);
    try {
      const res = await handleHttpRequest(
        request('POST', `/sessions/${sessionId}/messages`, { messages: [{ role: 'user', content: 'hello' }] }),
        deps,
        invocation(ANSWER_MARGIN_MS + 1_000),
      );
      expect(res.statusCode).toBe(503);
      expect(JSON.parse(res.body!)).toMatchObject({ error: { code: 'outcome_unknown' } });
    } finally {
      stalled = () => false;
      clearTimeout(letThrough);
      resume();
    }
    // The stalled transaction then lands: "nothing applied" would have been false.
    await expect
      .poll(async () => {
        const r = await handleHttpRequest(request('GET', `/sessions/${sessionId}`), deps, { requestId: 'read' });
        return (JSON.parse(r.body!) as { session: { messageCount: number } }).session.messageCount;
      })
      .toBe(1);
  }, 30_000);

  it('F1: a read still waiting on the store when the invocation ends answers 503 unavailable', async () => {
    const deps = await httpDeps(rt);
    const created = await handleHttpRequest(request('POST', '/sessions', {}), deps, { requestId: 'create' });
    const sessionId = (JSON.parse(created.body!) as { session: { sessionId: string } }).session.sessionId;
    stalled = (c) => c === 'QueryCommand' || c === 'GetItemCommand';
    const letThrough = setTimeout(() => resume(), 20_000);
    try {
      const res = await handleHttpRequest(
        request('GET', `/sessions/${sessionId}/messages`, undefined, { tail: '5' }),
        deps,
        invocation(ANSWER_MARGIN_MS + 1_000),
      );
      expect(res.statusCode).toBe(503);
      expect(JSON.parse(res.body!)).toMatchObject({ error: { code: 'unavailable' } });
      expect(res.headers?.['retry-after']).toBeDefined();
    } finally {
      stalled = () => false;
      clearTimeout(letThrough);
      resume();
    }
  }, 30_000);
});
