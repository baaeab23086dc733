// SPEC X2 on the held attempt's routes (issue 30), through the real composition root and handler,
// in process: a begin that carries an ownership receipt (expectedSessionId, expectedCount) begins
// only on the history the receipt read, checked by the begin's own conditional write (the one that
// issues the fence), and a `verbatim` commit writes the replacement exactly as sent.
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import { httpDeps } from '../../../lib/runtime.js';
import { RoundTrips } from '../../support/round-trips.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';

const rt = testStackRuntime();
const tenantId = `receipt-${randomUUID().slice(0, 8)}`;
let key: string;
let deps: ApiDeps;
let trips: RoundTrips;

beforeAll(async () => {
  const { dynamo, redis } = await rt.core();
  const keys = new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! });
  key = (await keys.create(tenantId)).key;
  deps = await httpDeps(rt);
  trips = new RoundTrips().watchDynamo(dynamo).watchRedis(redis);
});
afterAll(async () => {
  trips.restore();
  await rt.close();
});

interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function call(method: string, path: string, opts: { body?: unknown; token?: string; apiKey?: string } = {}): Promise<Answer> {
  const event: APIGatewayProxyEventV2 = gatewayEvent(opts.apiKey ?? key, method, path, opts.body);
  if (opts.token !== undefined) event.headers['lease-token'] = opts.token;
  const r = await handleHttpRequest(event, deps, { requestId: randomUUID() });
  return { status: r.statusCode ?? 0, body: r.body ? JSON.parse(r.body) : undefined };
}

const turns = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({
    role: (from + i) % 2 ? 'assistant' : 'user',
    content: `turn ${from + i}: ${'words '.repeat(20)}`,
  }));

async function seeded(n: number, format: 'chat' | 'responses' = 'chat', items?: unknown[]) {
  const { store } = await rt.core();
  const r = await store.createSession({ tenantId, format });
  if (r.replayed) throw new Error('unexpected replay');
  const ref = { tenantId, sessionId: r.session.sessionId };
  await store.appendItems(ref, { prepare: asIs((items ?? turns(n)) as never) });
  return ref;
}

async function begin(sessionId: string, body: Record<string, unknown> = {}): Promise<Answer> {
  return call('POST', `/sessions/${sessionId}/compactions`, { body });
}

function attemptPath(sessionId: string, attemptId: string, suffix = ''): string {
  return `/sessions/${sessionId}/compactions/${attemptId}${suffix}`;
}

const responses = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    type: 'message',
    role: i % 2 ? 'assistant' : 'user',
    content: `item ${i} ${'words '.repeat(20)}`,
  }));

describe('X2: held begins with an ownership receipt, and verbatim commits', () => {
  it('X2: a receipt whose count is the live one begins (201); one another write made stale answers skipped/stale with nothing written', async () => {
    const { store } = await rt.core();
    const ref = await seeded(4);
    const before = await store.getSession(ref);
    const stale = await trips.during(() => begin(ref.sessionId, { expectedCount: 3, expectedSessionId: ref.sessionId }));
    expect(stale.result.status).toBe(200);
    expect(stale.result.body).toEqual({ outcome: 'skipped', reason: 'stale', sessionId: ref.sessionId });
    // Decided by the begin's own write, refused by its condition: one UpdateItem, and the record is as it was.
    expect(stale.calls.filter((c) => c.op === 'UpdateItemCommand')).toHaveLength(1);
    const after = await store.getSession(ref);
    expect(after?.fence).toBe(before?.fence);
    expect(after?.attempt).toBeUndefined();
    expect(await store.readAll(ref)).toEqual(turns(4));
    // The lease was released: the next begin (the right count) starts at once.
    const won = await begin(ref.sessionId, { expectedCount: 4 });
    expect(won.status).toBe(201);
    expect(won.body.messages).toEqual(turns(4));
    await call('DELETE', attemptPath(ref.sessionId, won.body.attempt.attemptId), { token: won.body.attempt.leaseToken });
  });

  it('X2 (LAST_SEQ_AS_READ): a pop then an append since the read keeps the count but not lastSeq: skipped/stale, nothing written', async () => {
    const { store } = await rt.core();
    const ref = await seeded(4);
    const read = (await call('GET', `/sessions/${ref.sessionId}`)).body.session;
    expect(read).toMatchObject({ messageCount: 4, lastSeq: 4 });
    // Another process: a pop and an append (the count is 4 again; the new item is seq 5, never 4 again).
    await store.popLast(ref);
    await store.appendItems(ref, { prepare: asIs(turns(1, 9)) });
    expect((await call('GET', `/sessions/${ref.sessionId}`)).body.session).toMatchObject({ messageCount: 4, lastSeq: 5 });
    const receipt = { expectedSessionId: ref.sessionId, expectedCount: read.messageCount, expectedLastSeq: read.lastSeq };
    const stale = await begin(ref.sessionId, receipt);
    expect(stale.body).toEqual({ outcome: 'skipped', reason: 'stale', sessionId: ref.sessionId });
    expect((await store.getSession(ref))?.attempt).toBeUndefined();
    expect(await store.readAll(ref)).toEqual([...turns(3), ...turns(1, 9)]);
    // The count alone would have let it begin: the lastSeq clause is what refuses it.
    const countOnly = await begin(ref.sessionId, { expectedSessionId: ref.sessionId, expectedCount: 4 });
    expect(countOnly.status).toBe(201);
    await call('DELETE', attemptPath(ref.sessionId, countOnly.body.attempt.attemptId), { token: countOnly.body.attempt.leaseToken });
    const fresh = await begin(ref.sessionId, { ...receipt, expectedLastSeq: 5 });
    expect(fresh.status).toBe(201);
    await call('DELETE', attemptPath(ref.sessionId, fresh.body.attempt.attemptId), { token: fresh.body.attempt.leaseToken });
  });

  it('X2: a receipt for another session (the conversation rotated since) begins nothing: skipped/stale, no Redis or DynamoDB call', async () => {
    const ref = await seeded(4);
    const { result, phases } = await trips.during(() => begin(ref.sessionId, { expectedCount: 4, expectedSessionId: 'another-session' }));
    expect(result.body).toEqual({ outcome: 'skipped', reason: 'stale', sessionId: ref.sessionId });
    expect(phases).toMatchObject({ redisRounds: 0 });
    expect(await (await rt.core()).store.readAll(ref)).toEqual(turns(4));
  });

  it('X2: a bad receipt is a 400 before anything is done', async () => {
    const ref = await seeded(2);
    for (const body of [
      { expectedCount: -1 },
      { expectedCount: 1.5 },
      { expectedSessionId: '' },
      { expectedCount: '2' },
      { expectedCount: 2, expectedLastSeq: -1 },
    ]) {
      const r = await begin(ref.sessionId, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
  });

  it('X2: a verbatim commit writes the replacement as sent: larger than the snapshot and with no user turn (no C7 grown, no C8 anchor)', async () => {
    const { store } = await rt.core();
    const ref = await seeded(0, 'responses', responses(2));
    const replacement = [
      { type: 'compaction', id: 'cmp_1', encrypted_content: 'x'.repeat(5000) },
      { type: 'message', role: 'assistant', content: `kept ${'words '.repeat(3000)}` },
    ];
    const plain = await begin(ref.sessionId);
    const noop = await call('POST', attemptPath(ref.sessionId, plain.body.attempt.attemptId, '/commit'), {
      token: plain.body.attempt.leaseToken,
      body: { messages: replacement },
    });
    expect(noop.body).toMatchObject({ outcome: 'noop', reason: 'grown' });
    const held = await begin(ref.sessionId, { expectedCount: 2 });
    const done = await call('POST', attemptPath(ref.sessionId, held.body.attempt.attemptId, '/commit'), {
      token: held.body.attempt.leaseToken,
      body: { messages: replacement, verbatim: true },
    });
    expect(done.body).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: ref.sessionId });
    expect(await store.readAll(ref)).toEqual(replacement);
  });
});
