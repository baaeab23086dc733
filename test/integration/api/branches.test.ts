// H2 over HTTP, through the real handler: POST /conversations/{id}/branches (and the session twin)
// answer 201 with the new conversation and its branchedFrom edge, GET …/lineage and GET the
// conversation show the edge, bad input is a 400/409/422 with a code, a keyed retry creates one
// branch (Idempotent-Replayed: true), and the small branch is counted in DynamoDB round trips.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { LiveTips } from '../../../lib/api/live-tips.js';
import { httpDeps } from '../../../lib/runtime.js';
import { RoundTrips } from '../../support/round-trips.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';

const rt = testStackRuntime();
const tenantId = `h2-${randomUUID().slice(0, 8)}`;
let key: string;
let base: ApiDeps;
let trips: RoundTrips;

beforeAll(async () => {
  const { dynamo, redis } = await rt.core();
  key = (await new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! }).create(tenantId)).key;
  base = await httpDeps(rt);
  trips = new RoundTrips().watchDynamo(dynamo).watchRedis(redis);
});
afterAll(async () => {
  trips.restore();
  await rt.close();
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function call(method: string, path: string, body?: unknown, opts: { key?: string; deps?: ApiDeps } = {}): Promise<Answer> {
  const event = gatewayEvent(key, method, path, body);
  if (opts.key !== undefined) event.headers['idempotency-key'] = opts.key;
  const r = await handleHttpRequest(event, opts.deps ?? base, { requestId: randomUUID() });
  return { status: r.statusCode ?? 0, headers: (r.headers ?? {}) as Record<string, string>, body: r.body ? JSON.parse(r.body) : undefined };
}

const say = (n: number) => ({ role: n % 2 ? 'assistant' : 'user', content: `turn ${n}` });

async function conversation(deps?: ApiDeps): Promise<{ id: string; live: string }> {
  const id = `h2.${randomUUID().slice(0, 8)}`;
  const put = await call('PUT', `/conversations/${id}`, {}, { ...(deps ? { deps } : {}) });
  const r = await call('POST', `/conversations/${id}/messages`, { messages: [1, 2, 3, 4, 5, 6].map(say) }, { ...(deps ? { deps } : {}) });
  expect(r.status).toBe(200);
  return { id, live: put.body.conversation.liveSessionId };
}

describe('H2: POST /conversations/{id}/branches', () => {
  it('H2: a branch from the middle answers 201 with its edge; GET, GET …/lineage and GET …/messages of the branch show it; the source is untouched', async () => {
    const src = await conversation();
    const newId = `br.${randomUUID().slice(0, 8)}`;
    const r = await call('POST', `/conversations/${src.id}/branches`, { conversationId: newId, fromSeq: 3 });
    const edge = { conversationId: src.id, sessionId: src.live, seq: 3 };
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.conversation).toMatchObject({ conversationId: newId, messageCount: 3, sessions: 1, branchedFrom: edge, format: 'chat' });
    expect((await call('GET', `/conversations/${newId}`)).body.conversation.branchedFrom).toEqual(edge);
    const lineage = (await call('GET', `/conversations/${newId}/lineage`)).body;
    expect(lineage.branchedFrom).toEqual(edge);
    expect(lineage.chain).toHaveLength(1);
    expect(lineage.chain[0]).toMatchObject({ sessionId: r.body.conversation.rootSessionId, parentSessionId: null, branchedFrom: edge });
    expect((await call('GET', `/conversations/${newId}/messages`)).body.messages).toEqual([1, 2, 3].map(say));
    // The source: all its items, no edge, one session.
    expect((await call('GET', `/conversations/${src.id}/messages`)).body.messages).toEqual([1, 2, 3, 4, 5, 6].map(say));
    const source = (await call('GET', `/conversations/${src.id}`)).body.conversation;
    expect(source.branchedFrom).toBeUndefined();
    expect(source.sessions).toBe(1);
    expect((await call('GET', `/conversations/${src.id}/lineage`)).body.branchedFrom).toBeUndefined();
    // The session twin branches from one session.
    const twin = await call('POST', `/sessions/${src.live}/branches`, { conversationId: `${newId}.twin` });
    expect(twin.status).toBe(201);
    expect(twin.body.conversation).toMatchObject({ messageCount: 6, branchedFrom: { ...edge, seq: 6 } });
  });

  it('H2: bad input: a malformed id or fromSeq is 400, fromSeq past the count 400 from_seq_out_of_range, a taken id 409 conversation_exists, an unknown source 404', async () => {
    const src = await conversation();
    const path = `/conversations/${src.id}/branches`;
    const cases: [unknown, number, string][] = [
      [{}, 400, 'invalid_request'],
      [{ conversationId: 'has space' }, 400, 'invalid_request'],
      [{ conversationId: 'ok', fromSeq: 0 }, 400, 'invalid_request'],
      [{ conversationId: 'ok', fromSeq: 1.5 }, 400, 'invalid_request'],
      [{ conversationId: 'ok', extra: 1 }, 400, 'invalid_request'],
      [{ conversationId: `x.${randomUUID().slice(0, 8)}`, fromSeq: 7 }, 400, 'from_seq_out_of_range'],
      [{ conversationId: src.id }, 409, 'conversation_exists'],
    ];
    for (const [body, status, code] of cases) {
      const r = await call('POST', path, body);
      expect([JSON.stringify(body), r.status, r.body.error.code]).toEqual([JSON.stringify(body), status, code]);
    }
    expect((await call('POST', path, { conversationId: 'x', fromSeq: 7 })).body).toMatchObject({ field: 'fromSeq', messageCount: 6 });
    expect((await call('POST', `/conversations/nope-${randomUUID()}/branches`, { conversationId: 'y' })).status).toBe(404);
    expect((await call('GET', '/conversations/ok')).status).toBe(404);
  });

  it('H2: a retried branch with its Idempotency-Key creates one branch (Idempotent-Replayed: true); the same key with another body is 422 idempotency_key_reused', async () => {
    const src = await conversation();
    const newId = `br.${randomUUID().slice(0, 8)}`;
    const body = { conversationId: newId, fromSeq: 2 };
    const first = await call('POST', `/conversations/${src.id}/branches`, body, { key: 'branch-1' });
    // The source moved on meanwhile: the retry still answers the first response.
    await call('POST', `/conversations/${src.id}/messages`, { messages: [say(7)] });
    const again = await call('POST', `/conversations/${src.id}/branches`, body, { key: 'branch-1' });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    const other = await call('POST', `/conversations/${src.id}/branches`, { conversationId: `${newId}.2` }, { key: 'branch-1' });
    expect([other.status, other.body.error.code]).toEqual([422, 'idempotency_key_reused']);
    expect((await call('GET', `/conversations/${newId}.2`)).status).toBe(404);
    const listed = (await call('GET', '/conversations', undefined)).body.conversations.filter(
      (c: { conversationId: string }) => c.conversationId === newId,
    );
    expect(listed).toHaveLength(1);
  });

  it('H2: round trips of a small branch: 2 sequential DynamoDB calls when the container knows the tip and the record (Query, TransactWriteItems), 4 cold (plus the API key)', async () => {
    const warm: ApiDeps = { ...base, liveTips: new LiveTips() };
    const src = await conversation(warm);
    const steps = async (counter: RoundTrips, deps: ApiDeps, newId: string) => {
      const { result, phases } = await counter.during(() =>
        handleHttpRequest(gatewayEvent(key, 'POST', `/conversations/${src.id}/branches`, { conversationId: newId, fromSeq: 4 }), deps, {
          requestId: randomUUID(),
        }),
      );
      expect(result.statusCode, result.body).toBe(201);
      return phases;
    };
    const known = await steps(trips, warm, `br.${randomUUID().slice(0, 8)}`);
    expect(known.detail).toEqual(['Query', 'TransactWriteItems']);
    // A container that knows neither (a runtime of its own) reads the conversation's record, then the session's.
    const coldRt = testStackRuntime();
    const coldTrips = new RoundTrips().watchDynamo((await coldRt.core()).dynamo);
    try {
      const cold = await steps(coldTrips, { ...(await httpDeps(coldRt)), liveTips: new LiveTips() }, `br.${randomUUID().slice(0, 8)}`);
      // The API key's read (a container's first request), the conversation's record, the session's, the items, the commit.
      expect(cold.detail).toEqual(['GetItem', 'GetItem', 'GetItem', 'Query', 'TransactWriteItems']);
    } finally {
      coldTrips.restore();
      await coldRt.close();
    }
  });
});
