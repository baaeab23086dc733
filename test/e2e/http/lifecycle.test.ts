// Session lifecycle over real HTTP against serverless-offline (SPEC F1, I1, C11, C13, A5 tail, A6
// pop and delete). Every response is checked against functions/openapi.json by the client.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalService, type LocalService } from '../../support/local-service.js';
import { apiClient, type Api } from './api-client.js';
import { appendAll, chainIds, createSession, readAll, turns } from './session-helpers.js';

let service: LocalService;
let api: Api;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  api = apiClient(service.baseUrl, await service.createApiKey(`t-${randomUUID().slice(0, 8)}`));
});

afterAll(async () => {
  await service?.stop();
});

describe('HTTP lifecycle', () => {
  it('F1/I1: create, append, read, rotate to one child, lineage, 409 on the ended parent, appends on the child', async () => {
    const created = await api('POST', '/sessions', { body: { source: 'e2e', metadata: { suite: 'lifecycle' } } });
    expect(created.status).toBe(201);
    const id: string = created.body.session.sessionId;
    expect(created.body.session).toMatchObject({
      format: 'chat',
      parentSessionId: null,
      childSessionId: null,
      endedAt: null,
      messageCount: 0,
      source: 'e2e',
      metadata: { suite: 'lifecycle' },
    });

    for (let i = 0; i < 6; i++) {
      const appended = await api('POST', `/sessions/${id}/messages`, { body: { messages: turns(i, 1) } });
      expect(appended.status).toBe(200);
      expect(appended.body.appended).toBe(2);
      expect(appended.body.session.messageCount).toBe(2 * (i + 1));
    }
    expect((await api('GET', `/sessions/${id}`)).body.session.messageCount).toBe(12);
    expect(await readAll(api, id)).toEqual(turns(0, 6));

    const compressed = await api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
    expect(compressed.status).toBe(200);
    expect(compressed.body).toMatchObject({ outcome: 'compressed', mode: 'rotate', previousSessionId: id });
    const childId: string = compressed.body.sessionId;
    expect(childId).not.toBe(id);

    const parent = (await api('GET', `/sessions/${id}`)).body.session;
    expect(parent).toMatchObject({ childSessionId: childId, endReason: 'compression' });
    expect(parent.endedAt).toEqual(expect.any(String));
    const child = (await api('GET', `/sessions/${childId}`)).body.session;
    expect(child).toMatchObject({
      format: 'chat',
      parentSessionId: id,
      childSessionId: null,
      endedAt: null,
      metadata: { suite: 'lifecycle' },
    });
    // C10: the child's items are there as soon as the commit answered, and they are what it answered.
    expect(await readAll(api, childId)).toEqual(compressed.body.messages);
    expect(child.messageCount).toBe(compressed.body.messages.length);
    // The ended parent still reads as it was.
    expect(await readAll(api, id)).toEqual(turns(0, 6));

    const lineage = await api('GET', `/sessions/${id}/lineage`);
    expect(chainIds(lineage.body)).toEqual([id, childId]);
    expect(lineage.body.tip).toBe(childId);
    expect((await api('GET', `/sessions/${childId}/lineage`)).body).toEqual(lineage.body);

    const rejected = await api('POST', `/sessions/${id}/messages`, { body: { messages: [{ role: 'user', content: 'late' }] } });
    expect(rejected.status).toBe(409);
    expect(rejected.body).toMatchObject({ error: { code: 'session_ended' }, liveSessionId: childId });

    const onChild = await api('POST', `/sessions/${childId}/messages`, {
      body: { messages: [{ role: 'user', content: 'continuing on the child' }] },
    });
    expect(onChild.status).toBe(200);
    expect(onChild.body.session.messageCount).toBe(child.messageCount + 1);
    expect((await readAll(api, childId)).at(-1)).toEqual({ role: 'user', content: 'continuing on the child' });
  });

  it('C11: in-place compression keeps the session id and replaces the active items', async () => {
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 6));
    const res = await api('POST', `/sessions/${id}/compress`, { body: { keepLast: 2 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: id, previousSessionId: id });
    expect(res.body.messages.length).toBeLessThan(12);
    expect(await readAll(api, id)).toEqual(res.body.messages);
    expect((await api('GET', `/sessions/${id}`)).body.session).toMatchObject({
      messageCount: res.body.messages.length,
      childSessionId: null,
      endedAt: null,
    });
  });

  it('C13: a compress request with origin review is refused by rule, without messages', async () => {
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 4));
    const res = await api('POST', `/sessions/${id}/compress`, { body: { origin: 'review', mode: 'rotate' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ outcome: 'disabled', reason: 'review_origin', sessionId: id, warnings: [] });
    expect(await readAll(api, id)).toEqual(turns(0, 4));
  });

  it('A5: tail=N answers the latest N in chronological order, with no cursor', async () => {
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 10));
    const tail = await api('GET', `/sessions/${id}/messages?tail=3`);
    expect(tail.body).toEqual({
      messages: turns(0, 10).slice(-3),
      nextCursor: null,
      truncated: false,
      session: expect.objectContaining({ sessionId: id, messageCount: turns(0, 10).length, endedAt: null }),
    });
    // More than there are: all of them, still in order.
    expect((await api('GET', `/sessions/${id}/messages?tail=1000`)).body.messages).toEqual(turns(0, 10));
  });

  it('A6: pop removes and returns the last item, never reuses its place, and answers null on an empty session', async () => {
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 2));
    const popped = await api('DELETE', `/sessions/${id}/messages/last`);
    expect(popped.status).toBe(200);
    expect(popped.body.removed).toEqual(turns(1, 1)[1]);
    expect(popped.body.session.messageCount).toBe(3);
    expect(await readAll(api, id)).toEqual(turns(0, 2).slice(0, 3));

    // What is appended after a pop reads back after what is left, in order.
    await appendAll(api, id, [{ role: 'assistant', content: 'a better answer' }]);
    expect(await readAll(api, id)).toEqual([...turns(0, 2).slice(0, 3), { role: 'assistant', content: 'a better answer' }]);

    for (let i = 0; i < 4; i++) expect((await api('DELETE', `/sessions/${id}/messages/last`)).status).toBe(200);
    const empty = await api('DELETE', `/sessions/${id}/messages/last`);
    expect(empty.body.removed).toBeNull();
    expect(empty.body.session.messageCount).toBe(0);
    expect(await readAll(api, id)).toEqual([]);
  });

  it('A6: pop on an ended session is 409 naming the live session', async () => {
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 6));
    const child = (await api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } })).body.sessionId;
    const res = await api('DELETE', `/sessions/${id}/messages/last`);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: { code: 'session_ended' }, liveSessionId: child });
    expect(await readAll(api, id)).toEqual(turns(0, 6));
  });

  it("A6: a deleted session answers 404 on every route; its relatives' lineage stays consistent", async () => {
    const root = await createSession(api);
    await appendAll(api, root, turns(0, 6));
    const mid = (await api('POST', `/sessions/${root}/compress`, { body: { mode: 'rotate', keepLast: 2 } })).body.sessionId;
    await appendAll(api, mid, turns(6, 4));
    const tip = (await api('POST', `/sessions/${mid}/compress`, { body: { mode: 'rotate', keepLast: 2 } })).body.sessionId;

    const deleted = await api('DELETE', `/sessions/${mid}`);
    expect(deleted.status).toBe(204);
    const item = { messages: [{ role: 'user', content: 'x' }] };
    const answers = await Promise.all([
      api('GET', `/sessions/${mid}`),
      api('GET', `/sessions/${mid}/messages`),
      api('GET', `/sessions/${mid}/messages?tail=2`),
      api('GET', `/sessions/${mid}/lineage`),
      api('POST', `/sessions/${mid}/messages`, { body: item }),
      api('DELETE', `/sessions/${mid}/messages/last`),
      api('POST', `/sessions/${mid}/compress`, { body: { mode: 'rotate' } }),
      api('DELETE', `/sessions/${mid}`),
    ]);
    for (const r of answers) expect([r.status, r.body.error.code]).toEqual([404, 'not_found']);

    // Both relatives still read their lineage through the deleted link, which is marked, not cut.
    for (const from of [root, tip]) {
      const lineage = (await api('GET', `/sessions/${from}/lineage`)).body;
      expect(chainIds(lineage)).toEqual([root, mid, tip]);
      expect(lineage.tip).toBe(tip);
      const [r, m, t] = lineage.chain;
      expect([r.childSessionId, m.parentSessionId, m.childSessionId, t.parentSessionId]).toEqual([mid, root, tip, mid]);
      expect(m.deletedAt).toEqual(expect.any(String));
      expect(r.deletedAt).toBeUndefined();
      expect(t.deletedAt).toBeUndefined();
    }
    // The ended root still points at the live tip, and the tip is untouched.
    expect((await api('POST', `/sessions/${root}/messages`, { body: item })).body.liveSessionId).toBe(tip);
    expect((await api('POST', `/sessions/${tip}/messages`, { body: item })).status).toBe(200);
  });
});
