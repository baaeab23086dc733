// Issue 28 (items 2, 5, 6) through the real handler, in-process: two containers (two runtimes,
// each with its own store, record cache and known conversation tips) on one table, so one can
// delete and re-create what the other still remembers.
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { LiveTips } from '../../../lib/api/live-tips.js';
import { httpDeps } from '../../../lib/runtime.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';
import { begin, commitInput, doc, msg, tableName } from '../lineage/support.js';
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { conversationKey } from '../../../lib/lineage/dynamo/conversation-row.js';
import { metaKey } from '../../../lib/lineage/dynamo/keys.js';

const runtimes = [testStackRuntime(), testStackRuntime()];
const tenantId = `k3-${randomUUID().slice(0, 8)}`;
let key: string;
let a: ApiDeps;
let b: ApiDeps;

beforeAll(async () => {
  const { dynamo } = await runtimes[0]!.core();
  key = (await new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! }).create(tenantId)).key;
  a = { ...(await httpDeps(runtimes[0]!)), liveTips: new LiveTips() };
  b = { ...(await httpDeps(runtimes[1]!)), liveTips: new LiveTips() };
});
afterAll(async () => {
  for (const rt of runtimes) await rt.close();
});

function request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): APIGatewayProxyEventV2 {
  const e = gatewayEvent(key, method, path, body);
  return { ...e, headers: { ...e.headers, ...headers } };
}

async function send(deps: ApiDeps, method: string, path: string, body?: unknown, headers?: Record<string, string>) {
  const res = await handleHttpRequest(request(method, path, body, headers), deps, { requestId: randomUUID() });
  return { status: res.statusCode, headers: res.headers ?? {}, body: JSON.parse(res.body ?? 'null') as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

const say = (text: string) => ({ messages: [{ role: 'user', content: text }] });
const newId = () => `c.${randomUUID().slice(0, 8)}`;

describe('conversations through the API (issue 28)', () => {
  it('A3 K3: the same keyed append after another container deleted and re-created the conversation lands on the new one', async () => {
    const id = newId();
    const path = `/conversations/${id}`;
    expect((await send(a, 'PUT', path, {})).status).toBe(201);
    const first = await send(a, 'POST', `${path}/messages`, say('hello'), { 'idempotency-key': 'k' });
    expect(first.status).toBe(200);
    // Container B deletes the conversation and creates it again.
    expect((await send(b, 'DELETE', path)).status).toBe(204);
    expect((await send(b, 'PUT', path, {})).status).toBe(201);
    // Container A still knows the old tip: the keyed request is not a replay of the deleted conversation.
    const again = await send(a, 'POST', `${path}/messages`, say('hello'), { 'idempotency-key': 'k' });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    const read = await send(b, 'GET', `${path}/messages`);
    expect(read.body.messages).toEqual([{ role: 'user', content: 'hello' }]);
    // Its own retry now replays.
    const retry = await send(a, 'POST', `${path}/messages`, say('hello'), { 'idempotency-key': 'k' });
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect((await send(b, 'GET', path)).body.conversation.messageCount).toBe(1);
  });

  it('K3: DELETE /sessions/{liveSessionId} deletes the conversation: GET 404, then PUT creates it again and appends land', async () => {
    const id = newId();
    const path = `/conversations/${id}`;
    const created = await send(a, 'PUT', path, {});
    const live = created.body.conversation.liveSessionId as string;
    await send(a, 'POST', `${path}/messages`, say('one'));
    expect((await send(a, 'DELETE', `/sessions/${live}`)).status).toBe(204);
    expect((await send(a, 'GET', path)).status).toBe(404);
    expect((await send(b, 'POST', `${path}/messages`, say('two'))).status).toBe(404);
    const again = await send(a, 'PUT', path, {});
    expect(again.status).toBe(201);
    expect(again.body.conversation.liveSessionId).not.toBe(live);
    expect((await send(b, 'POST', `${path}/messages`, say('three'))).status).toBe(200);
    expect((await send(a, 'GET', `${path}/messages`)).body.messages).toEqual([{ role: 'user', content: 'three' }]);
    expect((await send(a, 'GET', `/sessions/${live}`)).status).toBe(404);
  });

  it('K1 K3: DELETE /conversations/{rootId} of a chain from before conversations, never used as one, deletes it (the lookup of GET)', async () => {
    const s = await send(a, 'POST', '/sessions', { format: 'chat' });
    const root = s.body.session.sessionId as string;
    await send(a, 'POST', `/sessions/${root}/messages`, say('one'));
    // As such a chain was stored: no conversation record, no conversation id on its session.
    const { dynamo } = await runtimes[0]!.core();
    await doc(dynamo).send(new DeleteCommand({ TableName: tableName(), Key: conversationKey(tenantId, root) }));
    await doc(dynamo).send(
      new UpdateCommand({ TableName: tableName(), Key: metaKey({ tenantId, sessionId: root }), UpdateExpression: 'REMOVE conversationId' }),
    );
    expect((await send(b, 'DELETE', `/conversations/${root}`)).status).toBe(204);
    expect((await send(a, 'GET', `/sessions/${root}`)).status).toBe(404);
    expect((await send(a, 'GET', `/conversations/${root}`)).status).toBe(404);
  });

  it('K3: chain R→M→T; DELETE T, then R, then the conversation: M is gone too, and the id is free', async () => {
    const id = newId();
    const path = `/conversations/${id}`;
    const r = (await send(a, 'PUT', path, {})).body.conversation.liveSessionId as string;
    const chain = [r];
    const { store } = await runtimes[0]!.core();
    for (let i = 0; i < 2; i++) {
      await send(a, 'POST', `${path}/messages`, say(`q${i}`));
      const ref = { tenantId, sessionId: chain.at(-1)! };
      chain.push((await store.commitRotation(ref, await begin(store, ref), commitInput([msg(i)]))).child.sessionId);
    }
    const [, m, t] = chain;
    expect(new Set(chain).size).toBe(3);
    await send(a, 'DELETE', `/sessions/${t}`);
    await send(a, 'DELETE', `/sessions/${r}`);
    await send(a, 'DELETE', path);
    for (const sessionId of chain) expect((await send(b, 'GET', `/sessions/${sessionId}`)).status).toBe(404);
    expect((await send(b, 'GET', `/sessions/${m}/messages`)).status).toBe(404);
    expect((await send(b, 'PUT', path, {})).status).toBe(201);
  });
});
