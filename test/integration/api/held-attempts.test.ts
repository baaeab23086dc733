// Held compaction attempts (SPEC E1-E8) through the real composition root and handler, in
// process: the agent's own engine runs between the begin and the commit (here: the test).
// Round trips counted on the runtime's own clients (P1, P2).
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import { httpDeps } from '../../../lib/runtime.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { RoundTrips } from '../../support/round-trips.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';

const rt = testStackRuntime();
const tenantId = `held-${randomUUID().slice(0, 8)}`;
let key: string;
let otherKey: string;
let deps: ApiDeps;
let trips: RoundTrips;

beforeAll(async () => {
  const { dynamo, redis } = await rt.core();
  const keys = new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! });
  key = (await keys.create(tenantId)).key;
  otherKey = (await keys.create(`${tenantId}-other`)).key;
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
const summary = [
  { role: 'user', content: 'the human asked for a summary' },
  { role: 'assistant', content: 'SUMMARY of the work so far' },
];

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

describe('held compaction attempts (SPEC E1-E8)', () => {
  it('E1: a begin answers 201 started with the attempt and the snapshot; the token is the only secret and the loser is told locked in one Redis round with no DynamoDB call (C1, P2)', async () => {
    const ref = await seeded(6);
    const won = await begin(ref.sessionId, { mode: 'rotate' });
    expect(won.status).toBe(201);
    expect(won.body).toMatchObject({
      outcome: 'started',
      truncated: false,
      attempt: { sessionId: ref.sessionId, mode: 'rotate', throughSeq: 6 },
    });
    expect(won.body.messages).toEqual(turns(6));
    const { attemptId, leaseToken, fence, ttlMs, heartbeatIntervalMs, expiresAt } = won.body.attempt;
    expect([typeof attemptId, typeof leaseToken, typeof fence, typeof expiresAt]).toEqual(['string', 'string', 'number', 'string']);
    expect(heartbeatIntervalMs).toBe(Math.max(1000, Math.min(60_000, ttlMs / 2)));

    const { result: loser, phases } = await trips.during(() => begin(ref.sessionId));
    expect(loser.status).toBe(200);
    expect(loser.body).toMatchObject({ outcome: 'skipped', reason: 'locked' });
    expect(JSON.stringify(loser.body)).not.toContain(leaseToken);
    expect(phases).toMatchObject({ redisRounds: 1, dynamoSteps: 0 });

    // E8: the status never shows the token.
    const status = await call('GET', attemptPath(ref.sessionId, attemptId));
    expect(status.body.attempt).toMatchObject({ status: 'running', attemptId });
    expect(JSON.stringify(status.body)).not.toContain(leaseToken);
    await call('DELETE', attemptPath(ref.sessionId, attemptId), { token: leaseToken });
  });

  it('E1/C13: origin review is disabled and takes no lease', async () => {
    const ref = await seeded(4);
    const r = await begin(ref.sessionId, { origin: 'review' });
    expect(r).toEqual({ status: 200, body: { outcome: 'disabled', reason: 'review_origin', sessionId: ref.sessionId } });
    const after = await begin(ref.sessionId);
    expect(after.status).toBe(201);
    await call('DELETE', attemptPath(ref.sessionId, after.body.attempt.attemptId), { token: after.body.attempt.leaseToken });
  });

  it('E1: unknown fields and out-of-range ttlMs get 400', async () => {
    const ref = await seeded(2);
    expect((await begin(ref.sessionId, { ttlMs: 1000 })).status).toBe(400);
    expect((await begin(ref.sessionId, { bogus: true })).status).toBe(400);
  });

  it('E3/I4: a rotation commit carries the items appended after the snapshot; a repeated commit answers the first outcome and makes no second child', async () => {
    const ref = await seeded(8);
    const { attempt } = (await begin(ref.sessionId, { mode: 'rotate' })).body;
    const late = { role: 'user', content: 'appended while the agent summarized' };
    expect((await call('POST', `/sessions/${ref.sessionId}/messages`, { body: { messages: [late] } })).status).toBe(200);
    const path = attemptPath(ref.sessionId, attempt.attemptId, '/commit');
    const first = await call('POST', path, { token: attempt.leaseToken, body: { messages: summary } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ outcome: 'compressed', mode: 'rotate', previousSessionId: ref.sessionId });
    expect(first.body.messages).toEqual([...summary, late]);
    const child = first.body.sessionId;

    const again = await call('POST', path, { token: attempt.leaseToken, body: { messages: summary } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ outcome: 'compressed', mode: 'rotate', sessionId: child, replayed: true });
    const { store } = await rt.core();
    expect((await store.children(ref)).map((s) => s.sessionId)).toEqual([child]);
    // I3: the lease was released: the child can be compacted at once.
    expect((await call('GET', attemptPath(ref.sessionId, attempt.attemptId))).body.attempt).toMatchObject({ status: 'committed' });
    // E4: an abort after the commit reports it.
    expect((await call('DELETE', attemptPath(ref.sessionId, attempt.attemptId), { token: attempt.leaseToken })).body.error.code).toBe(
      'committed',
    );
  });

  it('E3/C11: an in-place commit replaces items 1..throughSeq on the same session', async () => {
    const ref = await seeded(8);
    const { attempt } = (await begin(ref.sessionId)).body;
    const r = await call('POST', attemptPath(ref.sessionId, attempt.attemptId, '/commit'), {
      token: attempt.leaseToken,
      body: { messages: summary },
    });
    expect(r.body).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: ref.sessionId });
    const { store } = await rt.core();
    expect(await store.readAll(ref)).toEqual(summary);
  });

  it('E3/C7: an unchanged or empty replacement writes nothing, answers noop with its reason and frees the lease', async () => {
    for (const [replacement, reason] of [
      [turns(6), 'unchanged'],
      [[], 'empty_result'],
    ] as const) {
      const ref = await seeded(6);
      const { attempt } = (await begin(ref.sessionId, { mode: 'rotate' })).body;
      const r = await call('POST', attemptPath(ref.sessionId, attempt.attemptId, '/commit'), {
        token: attempt.leaseToken,
        body: { messages: replacement },
      });
      expect(r.body).toMatchObject({ outcome: 'noop', reason });
      const { store } = await rt.core();
      const s = await store.getSession(ref);
      expect([s?.endedAt, s?.childSessionId, s?.attempt]).toEqual([undefined, undefined, undefined]);
      expect((await begin(ref.sessionId)).status).toBe(201);
    }
  });

  it('E3/C8: a replacement with no real user turn gets the last one restored', async () => {
    const ref = await seeded(6);
    const { attempt } = (await begin(ref.sessionId)).body;
    const r = await call('POST', attemptPath(ref.sessionId, attempt.attemptId, '/commit'), {
      token: attempt.leaseToken,
      body: { messages: [{ role: 'assistant', content: 'SUMMARY only' }] },
    });
    expect(r.body.outcome).toBe('compressed');
    expect(r.body.messages.some((m: { role: string; content: string }) => m.role === 'user' && m.content.startsWith('turn 4'))).toBe(true);
  });

  it('E3/A6: a pop of a snapshotted item makes the commit skip (stale); nothing is written', async () => {
    const ref = await seeded(6);
    const { attempt } = (await begin(ref.sessionId, { mode: 'rotate' })).body;
    expect((await call('DELETE', `/sessions/${ref.sessionId}/messages/last`)).status).toBe(200);
    const r = await call('POST', attemptPath(ref.sessionId, attempt.attemptId, '/commit'), {
      token: attempt.leaseToken,
      body: { messages: summary },
    });
    expect(r.body).toMatchObject({ outcome: 'skipped', reason: 'stale' });
    const { store } = await rt.core();
    expect(await store.children(ref)).toEqual([]);
    expect(await store.readAll(ref)).toEqual(turns(5));
  });

  it('E7: a malformed replacement gets 400 naming messages[i] and leaves the attempt running; a Responses compaction item with encrypted_content is kept verbatim', async () => {
    const items = [
      { type: 'message', role: 'user', content: 'hello there, please do the work' },
      ...Array.from({ length: 6 }, (_, i) => ({ type: 'message', role: 'assistant', content: `long answer ${i} ${'x '.repeat(50)}` })),
    ];
    const ref = await seeded(0, 'responses', items);
    const { attempt } = (await begin(ref.sessionId)).body;
    const path = attemptPath(ref.sessionId, attempt.attemptId, '/commit');
    const bad = await call('POST', path, { token: attempt.leaseToken, body: { messages: [{ type: 'message', role: 42 }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.field).toMatch(/^messages\[0\]/);
    expect((await call('GET', attemptPath(ref.sessionId, attempt.attemptId))).body.attempt.status).toBe('running');
    const compaction = { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAA-opaque-blob', extra: { kept: true } };
    const replacement = [items[0], compaction];
    const ok = await call('POST', path, { token: attempt.leaseToken, body: { messages: replacement } });
    expect(ok.body.outcome).toBe('compressed');
    const { store } = await rt.core();
    expect(await store.readAll(ref)).toEqual(replacement);
  });

  it('E4: abort releases the lease token-checked, marks compaction failed and writes nothing else; a commit after it applies nothing', async () => {
    const ref = await seeded(6);
    const { attempt } = (await begin(ref.sessionId, { mode: 'rotate' })).body;
    const r = await call('DELETE', attemptPath(ref.sessionId, attempt.attemptId), { token: attempt.leaseToken });
    expect(r).toEqual({ status: 200, body: { outcome: 'skipped', reason: 'cancelled', sessionId: ref.sessionId } });
    const { store, lease } = await rt.core();
    const s = await store.getSession(ref);
    expect(s?.lastActivity?.label).toBe('compaction failed');
    expect([s?.attempt, s?.endedAt, s?.messageCount]).toEqual([undefined, undefined, 6]);
    expect(await lease.holderOf(sessionKey(ref))).toBeNull();
    const late = await call('POST', attemptPath(ref.sessionId, attempt.attemptId, '/commit'), {
      token: attempt.leaseToken,
      body: { messages: summary },
    });
    expect(late.body).toMatchObject({ outcome: 'skipped', reason: 'cancelled' });
    expect(await store.children(ref)).toEqual([]);
    expect((await call('GET', attemptPath(ref.sessionId, attempt.attemptId))).body.attempt.status).toBe('cancelled');
  });

  it('E8: a wrong or missing Lease-Token changes nothing; another tenant and an unknown attempt get 404', async () => {
    const ref = await seeded(6);
    const { attempt } = (await begin(ref.sessionId)).body;
    const commit = attemptPath(ref.sessionId, attempt.attemptId, '/commit');
    expect((await call('POST', commit, { token: 'not-the-token', body: { messages: summary } })).status).toBe(403);
    expect((await call('POST', commit, { body: { messages: summary } })).status).toBe(401);
    expect((await call('DELETE', attemptPath(ref.sessionId, attempt.attemptId), { token: 'not-the-token' })).status).toBe(403);
    expect((await call('POST', attemptPath(ref.sessionId, attempt.attemptId, '/heartbeat'), { token: 'nope' })).status).toBe(403);
    expect((await call('POST', commit, { token: attempt.leaseToken, body: { messages: summary }, apiKey: otherKey })).status).toBe(404);
    expect((await call('GET', attemptPath(ref.sessionId, attempt.attemptId), { apiKey: otherKey })).status).toBe(404);
    expect((await call('GET', attemptPath(ref.sessionId, 'AAAA'))).status).toBe(404);
    // Still running, still the agent's: the right token commits.
    const ok = await call('POST', commit, { token: attempt.leaseToken, body: { messages: summary } });
    expect(ok.body.outcome).toBe('compressed');
  });

  it('E2: a heartbeat extends the lease in one Redis round and writes no DynamoDB item within 10 s of the last mark', async () => {
    const ref = await seeded(6);
    const { attempt } = (await begin(ref.sessionId)).body;
    const { result, phases } = await trips.during(() =>
      call('POST', attemptPath(ref.sessionId, attempt.attemptId, '/heartbeat'), { token: attempt.leaseToken }),
    );
    expect(result.status).toBe(200);
    expect(result.body.attempt).toMatchObject({ attemptId: attempt.attemptId, status: 'running' });
    expect(Date.parse(result.body.attempt.expiresAt)).toBeGreaterThanOrEqual(Date.parse(attempt.expiresAt));
    expect(JSON.stringify(result.body)).not.toContain(attempt.leaseToken);
    expect(phases).toMatchObject({ redisRounds: 1, dynamoSteps: 0 });
    await call('DELETE', attemptPath(ref.sessionId, attempt.attemptId), { token: attempt.leaseToken });
  });

  it('E6: a held attempt and the service engine share one lease: a compress meets the held attempt as locked', async () => {
    const ref = await seeded(6);
    const { attempt } = (await begin(ref.sessionId)).body;
    const c = await call('POST', `/sessions/${ref.sessionId}/compress`, { body: { mode: 'rotate' } });
    expect(c.body).toMatchObject({ outcome: 'skipped', reason: 'locked' });
    await call('DELETE', attemptPath(ref.sessionId, attempt.attemptId), { token: attempt.leaseToken });
    expect((await call('POST', `/sessions/${ref.sessionId}/compress`, { body: { mode: 'rotate' } })).body.outcome).not.toBe('skipped');
  });

  it('E5: an attempt whose agent vanished is taken over once its lease expires; its late heartbeat and commit are refused (lease_lost) and nothing forks', async () => {
    const ref = await seeded(6);
    const old = (await begin(ref.sessionId, { mode: 'rotate', ttlMs: 5000 })).body.attempt;
    await new Promise((r) => setTimeout(r, 5600));
    const next = await begin(ref.sessionId, { mode: 'rotate' });
    expect(next.status).toBe(201);
    expect(next.body.attempt.fence).toBeGreaterThan(old.fence);
    expect((await call('POST', attemptPath(ref.sessionId, old.attemptId, '/heartbeat'), { token: old.leaseToken })).body.error.code).toBe(
      'lease_lost',
    );
    const late = await call('POST', attemptPath(ref.sessionId, old.attemptId, '/commit'), {
      token: old.leaseToken,
      body: { messages: summary },
    });
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('lease_lost');
    expect((await call('GET', attemptPath(ref.sessionId, old.attemptId))).body.attempt.status).toBe('lost');
    const won = await call('POST', attemptPath(ref.sessionId, next.body.attempt.attemptId, '/commit'), {
      token: next.body.attempt.leaseToken,
      body: { messages: summary },
    });
    expect(won.body.outcome).toBe('compressed');
    const { store } = await rt.core();
    expect(await store.children(ref)).toHaveLength(1);
  });

  it('E1/K2: the conversation form begins on the live tip and its commit moves the tip', async () => {
    const convId = `conv-${randomUUID().slice(0, 8)}`;
    expect((await call('PUT', `/conversations/${convId}`, { body: {} })).status).toBe(201);
    expect((await call('POST', `/conversations/${convId}/messages`, { body: { messages: turns(6) } })).status).toBe(200);
    const { attempt } = (await call('POST', `/conversations/${convId}/compactions`, { body: { mode: 'rotate' } })).body;
    const r = await call('POST', `/conversations/${convId}/compactions/${attempt.attemptId}/commit`, {
      token: attempt.leaseToken,
      body: { messages: summary },
    });
    expect(r.body.outcome).toBe('compressed');
    const conv = await call('GET', `/conversations/${convId}/lineage`);
    expect(conv.body.tip).toBe(r.body.sessionId);
    const again = await call('POST', `/conversations/${convId}/compactions`, { body: {} });
    expect(again.body.attempt.sessionId).toBe(r.body.sessionId);
    await call('DELETE', `/conversations/${convId}/compactions/${again.body.attempt.attemptId}`, { token: again.body.attempt.leaseToken });
  });
});
