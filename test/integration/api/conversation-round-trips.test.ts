// P5 (conversation part), counted, not timed: a conversation route adds no sequential DynamoDB
// call to the session route's path when the container knows the live tip, and one when it does
// not (the conversation record's read). Through the real composition root and handler.
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { LiveTips } from '../../../lib/api/live-tips.js';
import { httpDeps } from '../../../lib/runtime.js';
import { RoundTrips } from '../../support/round-trips.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';

// Limits off: these count the conversation path's own calls (the per-tenant limiter's one call is in the README).
const rt = testStackRuntime();
const tenantId = `p5-${randomUUID().slice(0, 8)}`;
let key: string;
let trips: RoundTrips;
let base: ApiDeps;

beforeAll(async () => {
  const { dynamo, redis } = await rt.core();
  key = (await new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! }).create(tenantId)).key;
  trips = new RoundTrips().watchDynamo(dynamo).watchRedis(redis);
  base = await httpDeps(rt);
});
afterAll(async () => {
  trips.restore();
  await rt.close();
});

function request(method: string, path: string, body?: unknown, query?: Record<string, string>): APIGatewayProxyEventV2 {
  return gatewayEvent(key, method, path, body, query);
}

async function send(deps: ApiDeps, event: APIGatewayProxyEventV2) {
  const res = await handleHttpRequest(event, deps, { requestId: randomUUID() });
  expect(res.statusCode, res.body).toBeLessThan(300);
  return JSON.parse(res.body ?? 'null') as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function steps(deps: ApiDeps, event: APIGatewayProxyEventV2): Promise<number> {
  const { result, phases } = await trips.during(() => handleHttpRequest(event, deps, { requestId: randomUUID() }));
  expect(result.statusCode, result.body).toBeLessThan(300);
  return phases.dynamoSteps;
}

const say = (text: string) => ({ messages: [{ role: 'user', content: text }] });

/** A conversation with a few items; `deps` learns its tip by creating it. */
async function conversation(deps: ApiDeps): Promise<{ path: string; live: string }> {
  const id = `p5.${randomUUID().slice(0, 8)}`;
  const created = await send(deps, request('PUT', `/conversations/${id}`, {}));
  const path = `/conversations/${id}`;
  // Enough items for three pops (one per route variant).
  for (const text of ['one', 'two', 'three', 'four']) await send(deps, request('POST', `${path}/messages`, say(text)));
  return { path, live: created.conversation.liveSessionId as string };
}

type Case = [string, (p: string) => APIGatewayProxyEventV2];
const cases: Case[] = [
  ['append', (p) => request('POST', `${p}/messages`, say('more'))],
  ['page', (p) => request('GET', `${p}/messages`, undefined, { limit: '50' })],
  ['tail', (p) => request('GET', `${p}/messages`, undefined, { tail: '5' })],
  ['pop', (p) => request('DELETE', `${p}/messages/last`)],
  ['lineage', (p) => request('GET', `${p}/lineage`)],
];

describe('conversation routes in round trips (P5)', () => {
  it.each(cases)('P5: %s through a conversation adds no DynamoDB step when the tip is known, one when it is not', async (_name, make) => {
    const warm: ApiDeps = { ...base, liveTips: new LiveTips() };
    const { path, live } = await conversation(warm);
    const viaSession = await steps(warm, make(`/sessions/${live}`));
    const known = await steps(warm, make(path));
    const cold = await steps({ ...base, liveTips: new LiveTips() }, make(path));
    expect({ known, cold }).toEqual({ known: viaSession, cold: viaSession + 1 });
  });

  it('P5: the listing activity mark an append refreshes runs beside it, not after it', async () => {
    const tips = new LiveTips();
    const deps: ApiDeps = { ...base, liveTips: tips };
    const { path, live } = await conversation(deps);
    const id = path.split('/').at(-1)!;
    tips.set(tenantId, id, { ...tips.get(tenantId, id)!, activeAtMs: 0 });
    const viaSession = await steps(deps, request('POST', `/sessions/${live}/messages`, say('s')));
    const { result, phases, calls } = await trips.during(() =>
      handleHttpRequest(request('POST', `${path}/messages`, say('c')), deps, { requestId: 'mark' }),
    );
    expect(result.statusCode).toBe(200);
    const mark = calls.find((c) => c.op === 'UpdateItemCommand');
    expect(mark).toBeDefined();
    // It started before the append's first call ended: beside it, never a step of its own.
    const append = calls.find((c) => c.kind === 'dynamodb' && c !== mark)!;
    expect(mark!.start).toBeLessThan(append.end);
    expect(phases.dynamoSteps).toBeLessThanOrEqual(viaSession);
  });

  it('P5: GET /conversations/{id} is one step with the tip known (record and live session side by side), two without', async () => {
    const deps: ApiDeps = { ...base, liveTips: new LiveTips() };
    const { path } = await conversation(deps);
    expect(await steps(deps, request('GET', path))).toBe(1);
    expect(await steps({ ...base, liveTips: new LiveTips() }, request('GET', path))).toBe(2);
  });
});
