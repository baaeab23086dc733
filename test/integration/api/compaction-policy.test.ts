// The per-conversation compaction policy (SPEC E6): `compaction: 'agent'` keeps the service's
// engine off a conversation (compress answers 409 agent_engine unless forced) while held attempts
// (the agent's own engine) go on. The policy lives on the live session's record and is checked
// by the begin's own condition, so it costs no read: counted on the runtime's own clients (P1, P2).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { httpDeps } from '../../../lib/runtime.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { RoundTrips } from '../../support/round-trips.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';

const rt = testStackRuntime();
const tenantId = `policy-${randomUUID().slice(0, 8)}`;
let key: string;
let deps: ApiDeps;
let trips: RoundTrips;

beforeAll(async () => {
  const { dynamo, redis } = await rt.core();
  key = (await new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! }).create(tenantId)).key;
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

async function call(method: string, path: string, opts: { body?: unknown; token?: string } = {}): Promise<Answer> {
  const event = gatewayEvent(key, method, path, opts.body);
  if (opts.token !== undefined) event.headers['lease-token'] = opts.token;
  const r = await handleHttpRequest(event, deps, { requestId: randomUUID() });
  return { status: r.statusCode ?? 0, body: r.body ? JSON.parse(r.body) : undefined };
}

const turns = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} `.repeat(30) }));
const summary = [
  { role: 'user', content: 'the human asked for a summary' },
  { role: 'assistant', content: 'SUMMARY of the work so far' },
];

/** A conversation with 12 items, under the given policy (none: the default). */
async function conversation(compaction?: 'service' | 'agent'): Promise<{ id: string; sessionId: string }> {
  const id = `pol-${randomUUID().slice(0, 8)}`;
  const put = await call('PUT', `/conversations/${id}`, { body: compaction ? { compaction } : {} });
  expect(put.status).toBe(201);
  expect((await call('POST', `/conversations/${id}/messages`, { body: { messages: turns(12) } })).status).toBe(200);
  return { id, sessionId: put.body.conversation.liveSessionId };
}

describe('compaction policy (SPEC E6)', () => {
  it('E6: PUT and PATCH /conversations/{id} accept compaction service|agent (default service), shown in the view; any other value is 400', async () => {
    const id = `pol-${randomUUID().slice(0, 8)}`;
    const created = await call('PUT', `/conversations/${id}`, { body: {} });
    expect(created.body.conversation).toMatchObject({ compaction: 'service', turns: 'optional' });
    expect((await call('PATCH', `/conversations/${id}`, { body: { compaction: 'agent' } })).body.conversation.compaction).toBe('agent');
    expect((await call('GET', `/conversations/${id}`)).body.conversation.compaction).toBe('agent');
    // PUT of an existing conversation sets it too, beside turns.
    const both = await call('PUT', `/conversations/${id}`, { body: { compaction: 'service', turns: 'required' } });
    expect(both.body.conversation).toMatchObject({ compaction: 'service', turns: 'required' });
    for (const bad of ['server', 'AGENT', 1, null]) {
      const r = await call('PATCH', `/conversations/${id}`, { body: { compaction: bad } });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
    }
    expect((await call('PUT', `/conversations/x-${id}`, { body: { compaction: 'none' } })).status).toBe(400);
    expect((await call('GET', `/conversations/${id}`)).body.conversation.compaction).toBe('service');
  });

  it('E6: under the agent policy a compress without force answers 409 agent_engine on both forms, writes nothing, frees the lease and reads nothing first (the begin update is refused by its condition)', async () => {
    const conv = await conversation('agent');
    const { store, lease } = await rt.core();
    const before = await store.getSession({ tenantId, sessionId: conv.sessionId });
    const { result, calls, phases } = await trips.during(() =>
      call('POST', `/sessions/${conv.sessionId}/compress`, { body: { mode: 'rotate' } }),
    );
    expect(result.status).toBe(409);
    expect(result.body.error.code).toBe('agent_engine');
    // Acquire, the refused begin (no read before or after it), release.
    expect(calls.filter((c) => c.kind === 'dynamodb').map((c) => c.op)).toEqual(['UpdateItemCommand']);
    expect(phases).toMatchObject({ redisRounds: 2, dynamoSteps: 1 });
    const viaConversation = await call('POST', `/conversations/${conv.id}/compress`, { body: {} });
    expect([viaConversation.status, viaConversation.body.error.code]).toEqual([409, 'agent_engine']);
    const after = await store.getSession({ tenantId, sessionId: conv.sessionId });
    expect([after?.fence, after?.attempt, after?.endedAt, after?.messageCount]).toEqual([before?.fence, undefined, undefined, 12]);
    expect(await lease.holderOf(sessionKey({ tenantId, sessionId: conv.sessionId }))).toBeNull();
  });

  it('E6: force: true compacts an agent-policy conversation with the service engine; the service policy needs no force', async () => {
    const agent = await conversation('agent');
    const forced = await call('POST', `/conversations/${agent.id}/compress`, { body: { mode: 'rotate', force: true } });
    expect(forced.status).toBe(200);
    expect(forced.body).toMatchObject({ outcome: 'compressed', previousSessionId: agent.sessionId });
    expect((await call('POST', `/conversations/${agent.id}/compress`, { body: { force: 'yes' } })).status).toBe(400);
    const service = await conversation();
    expect((await call('POST', `/sessions/${service.sessionId}/compress`, { body: { mode: 'rotate' } })).body.outcome).toBe('compressed');
  });

  it('E6: a losing compress under the agent policy is still answered in one Redis round with no DynamoDB call (P2)', async () => {
    const conv = await conversation('agent');
    const { lease } = await rt.core();
    const ref = { tenantId, sessionId: conv.sessionId };
    const held = await lease.tryAcquire(sessionKey(ref), { ttlMs: 30_000, holder: 'someone-else' });
    if (!held.acquired) throw new Error('test lease not acquired');
    try {
      await call('GET', `/sessions/${conv.sessionId}`); // the API key is cached from here on
      const { result, phases, calls } = await trips.during(() => call('POST', `/sessions/${conv.sessionId}/compress`, { body: {} }));
      expect(result.body).toMatchObject({ outcome: 'skipped', reason: 'locked' });
      expect(calls.map((c) => `${c.kind}:${c.op}`)).toEqual(['redis:set', 'redis:set', 'redis:set']);
      expect(phases).toMatchObject({ redisRounds: 1, dynamoSteps: 0 });
    } finally {
      await lease.release(held);
    }
  });

  it('E6: held attempts (the agent engine) begin and commit under the agent policy, and the rotation child inherits the policy', async () => {
    const conv = await conversation('agent');
    const begun = await call('POST', `/conversations/${conv.id}/compactions`, { body: { mode: 'rotate' } });
    expect(begun.status).toBe(201);
    const { attempt } = begun.body;
    const committed = await call('POST', `/conversations/${conv.id}/compactions/${attempt.attemptId}/commit`, {
      token: attempt.leaseToken,
      body: { messages: summary },
    });
    expect(committed.body).toMatchObject({ outcome: 'compressed', mode: 'rotate', previousSessionId: conv.sessionId });
    const child = committed.body.sessionId as string;
    expect(child).not.toBe(conv.sessionId);
    // The child's own record keeps the policy: its begin is refused with no read of the parent.
    expect((await call('GET', `/conversations/${conv.id}`)).body.conversation).toMatchObject({ liveSessionId: child, compaction: 'agent' });
    const c = await call('POST', `/sessions/${child}/compress`, { body: { mode: 'rotate' } });
    expect([c.status, c.body.error?.code]).toEqual([409, 'agent_engine']);
  });

  it('E6: a conversation set back to service compacts with the service engine again', async () => {
    const conv = await conversation('agent');
    expect((await call('POST', `/conversations/${conv.id}/compress`, { body: {} })).status).toBe(409);
    expect((await call('PATCH', `/conversations/${conv.id}`, { body: { compaction: 'service' } })).body.conversation.compaction).toBe(
      'service',
    );
    expect((await call('POST', `/conversations/${conv.id}/compress`, { body: { mode: 'rotate' } })).body.outcome).toBe('compressed');
  });
});
