// Full session lifecycle over real HTTP against serverless-offline (SPEC F1, F2, I1, I4).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalService, type LocalService } from '../../support/local-service.js';
import { apiClient, expectDocumented } from './api-client.js';

let service: LocalService;
let api: ReturnType<typeof apiClient>;

beforeAll(async () => {
  service = await startLocalService();
  api = apiClient(service.baseUrl, await service.createApiKey(`t-${randomUUID().slice(0, 8)}`));
});

afterAll(async () => {
  await service?.stop();
});

const turn = (i: number) => [
  { role: 'user', content: `Question ${i}: how should the ${i}th widget be configured for the staging cluster?` },
  { role: 'assistant', content: `Answer ${i}: set replicas to ${i}, enable the health probe, and pin the image digest. ${'Details follow. '.repeat(20)}` },
];

describe('HTTP lifecycle', () => {
  it('F1/I1: create, append, read, rotate to one child, lineage, 409 on the ended parent, appends on the child', async () => {
    const created = await api('POST', '/sessions', { body: { source: 'e2e', metadata: { suite: 'lifecycle' } } });
    expect(created.status).toBe(201);
    expectDocumented(created, 'POST', '/sessions');
    const id: string = created.body.session.sessionId;
    expect(created.body.session).toMatchObject({ parentSessionId: null, childSessionId: null, endedAt: null, messageCount: 0, source: 'e2e' });

    for (let i = 0; i < 6; i++) {
      const appended = await api('POST', `/sessions/${id}/messages`, { body: { messages: turn(i) } });
      expect(appended.status).toBe(200);
      expectDocumented(appended, 'POST', '/sessions/{id}/messages');
      expect(appended.body.appended).toBe(2);
    }

    const read = await api('GET', `/sessions/${id}`);
    expect(read.status).toBe(200);
    expectDocumented(read, 'GET', '/sessions/{id}');
    expect(read.body.session.messageCount).toBe(12);

    const messages = await api('GET', `/sessions/${id}/messages`);
    expect(messages.status).toBe(200);
    expectDocumented(messages, 'GET', '/sessions/{id}/messages');
    expect(messages.body.messages.map((m: { content: string }) => m.content)).toEqual(
      Array.from({ length: 6 }, (_, i) => turn(i).map((m) => m.content)).flat(),
    );

    const compressed = await api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
    expect(compressed.status, JSON.stringify(compressed.body)).toBe(200);
    expectDocumented(compressed, 'POST', '/sessions/{id}/compress');
    expect(compressed.body).toMatchObject({ outcome: 'compressed', mode: 'rotate', previousSessionId: id });
    const childId: string = compressed.body.sessionId;
    expect(childId).not.toBe(id);

    const parent = await api('GET', `/sessions/${id}`);
    expect(parent.body.session).toMatchObject({ childSessionId: childId, endReason: 'compression' });
    expect(parent.body.session.endedAt).toEqual(expect.any(String));
    const child = await api('GET', `/sessions/${childId}`);
    expect(child.body.session).toMatchObject({ parentSessionId: id, childSessionId: null, endedAt: null });
    const childMessages = await api('GET', `/sessions/${childId}/messages`);
    expect(childMessages.body.messages.length).toBeGreaterThan(0);
    expect(childMessages.body.messages.length).toBe(child.body.session.messageCount);

    const lineage = await api('GET', `/sessions/${id}/lineage`);
    expect(lineage.status).toBe(200);
    expectDocumented(lineage, 'GET', '/sessions/{id}/lineage');
    expect(lineage.body.chain.map((s: { sessionId: string }) => s.sessionId)).toEqual([id, childId]);
    expect(lineage.body.tip).toBe(childId);
    const lineageFromChild = await api('GET', `/sessions/${childId}/lineage`);
    expect(lineageFromChild.body).toEqual(lineage.body);

    const rejected = await api('POST', `/sessions/${id}/messages`, { body: { messages: [{ role: 'user', content: 'late' }] } });
    expect(rejected.status).toBe(409);
    expectDocumented(rejected, 'POST', '/sessions/{id}/messages');
    expect(rejected.body).toMatchObject({ error: { code: 'session_ended' }, liveSessionId: childId });

    const onChild = await api('POST', `/sessions/${childId}/messages`, { body: { messages: [{ role: 'user', content: 'continuing on the child' }] } });
    expect(onChild.status).toBe(200);
    expect(onChild.body.session.messageCount).toBe(child.body.session.messageCount + 1);
    const after = await api('GET', `/sessions/${childId}/messages`);
    expect(after.body.messages.at(-1)).toMatchObject({ role: 'user', content: 'continuing on the child' });
  });

  it('C11: in-place compression keeps the session id and replaces the active messages', async () => {
    const id: string = (await api('POST', '/sessions', { body: {} })).body.session.sessionId;
    for (let i = 0; i < 6; i++) await api('POST', `/sessions/${id}/messages`, { body: { messages: turn(i) } });
    const res = await api('POST', `/sessions/${id}/compress`, { body: { keepLast: 2 } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expectDocumented(res, 'POST', '/sessions/{id}/compress');
    expect(res.body).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: id, previousSessionId: id });
    const messages = await api('GET', `/sessions/${id}/messages`);
    expect(messages.body.messages).toEqual(res.body.messages);
    expect(messages.body.messages.length).toBeLessThan(12);
  });

  it('C13: a compress request with origin review is refused by rule', async () => {
    const id: string = (await api('POST', '/sessions', { body: {} })).body.session.sessionId;
    await api('POST', `/sessions/${id}/messages`, { body: { messages: turn(1) } });
    const res = await api('POST', `/sessions/${id}/compress`, { body: { origin: 'review', mode: 'rotate' } });
    expect(res.status).toBe(200);
    expectDocumented(res, 'POST', '/sessions/{id}/compress');
    expect(res.body).toMatchObject({ outcome: 'disabled', reason: 'review_origin', sessionId: id });
  });
});
