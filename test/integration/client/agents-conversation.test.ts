// LineageSession works on a conversation (SPEC K1-K3), not on a session id it has to chase:
// its id stays for the object's life while other processes rotate, compact in place, clear or
// delete the conversation, and two objects (two clients) on one id share it. Real HTTP against
// the local service; the "other process" is another client.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LineageClient, NotFoundError } from '../../../lib/client/index.js';
import { LineageSession, type LineageSessionEvent } from '../../../lib/client/agents.js';
import { exchange, recording as recordingOn } from '../../support/client/agents-fixtures.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';

let service: LocalService;
let apiKey: string;
let other: LineageClient;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  apiKey = await service.createApiKey(`conv-${randomUUID().slice(0, 8)}`);
  other = new LineageClient({ baseUrl: service.baseUrl, apiKey });
});

afterAll(async () => {
  await service?.stop();
});

const recording = (key = apiKey) => recordingOn(service.baseUrl, key, undefined);
/** A tenant of its own, so a test can use the literal id 'user_123'. */
const tenant = async () => service.createApiKey(`t-${randomUUID().slice(0, 8)}`);

/** A session with 14 items on conversation `id`, which another process then rotated. */
async function rotatedElsewhere() {
  const { client, seen } = recording();
  const events: LineageSessionEvent[] = [];
  const id = `rot-${randomUUID().slice(0, 8)}`;
  const s = new LineageSession({ client, sessionId: id, onEvent: (e) => events.push(e) });
  await s.addItems(exchange(14));
  const root = s.liveSessionId!;
  const child = (await other.compressConversation(id, { mode: 'rotate', keepLast: 2 })).sessionId;
  expect(child).not.toBe(root);
  seen.length = 0;
  return { s, id, seen, root, child, events };
}

describe('LineageSession: one conversation id whatever other processes do', () => {
  it('K1: getSessionId() is the same id across a rotation and an in-place compaction made by another process, and across a clear', async () => {
    const { s, id, root, child, seen } = await rotatedElsewhere();
    expect(await s.getSessionId()).toBe(id);
    await s.addItems(exchange(6, 'after rotation'));
    expect(s.liveSessionId).toBe(child);
    expect(await s.getSessionId()).toBe(id);

    const inPlace = await other.compressConversation(id, { mode: 'in_place', keepLast: 2 });
    expect(inPlace).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: child });
    expect(await s.getItems()).toEqual((await other.readConversation(id)).items);
    expect(await s.getSessionId()).toBe(id);

    await s.clearSession();
    expect(await s.getSessionId()).toBe(id);
    expect(await s.getItems()).toEqual([]);
    expect([root, child]).not.toContain(s.liveSessionId);
    // Every request named the conversation, never a session: nothing to chase, no 404 or 409 answered.
    expect(seen.every((r) => r.path === `/conversations/${id}` || r.path.startsWith(`/conversations/${id}/`))).toBe(true);
    expect(seen.filter((r) => r.status === 404 || r.status === 409)).toEqual([]);
  });

  it('K2: addItems after a rotation elsewhere is one request that lands once on the live session; the session reports following it', async () => {
    const { s, id, seen, root, child, events } = await rotatedElsewhere();
    const items = exchange(2, 'landed');
    await s.addItems(items);
    expect(seen.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([`POST /conversations/${id}/messages 200`]);
    expect(events).toContainEqual({ type: 'followed', from: root, to: child, via: 'rotation' });
    expect(events.filter((e) => e.type === 'appended').at(-1)).toMatchObject({ sessionId: child, count: 2 });
    expect((await other.readAll(child)).slice(-2)).toEqual(items);
    expect(await other.getSession(root)).toMatchObject({ messageCount: 14 });
  });

  it("K2: getItems() reads the live transcript, not the ended parent's, in one request", async () => {
    const { s, seen, child } = await rotatedElsewhere();
    expect(await s.getItems()).toEqual(await other.readAll(child));
    expect(seen).toHaveLength(1);
    expect(s.liveSessionId).toBe(child);
  });

  it("K2/A6: popItem after a rotation elsewhere pops the live session's last item", async () => {
    const { s, root, child } = await rotatedElsewhere();
    const last = (await other.readAll(child)).at(-1);
    expect(await s.popItem()).toEqual(last);
    expect(s.liveSessionId).toBe(child);
    expect(await other.getSession(root)).toMatchObject({ messageCount: 14 });
  });

  it('K2/I1: compact() after a rotation elsewhere acts on the live session: the ended parent keeps its one child', async () => {
    const { s, id, root, child } = await rotatedElsewhere();
    await s.addItems(exchange(10, 'more'));
    const r = await s.compact({ mode: 'rotate', keepLast: 2 });
    expect(r).toMatchObject({ outcome: 'compressed', mode: 'rotate', previousSessionId: child });
    expect(s.liveSessionId).toBe(r.sessionId);
    const { chain, tip } = await other.conversationLineage(id);
    expect(chain.map((x) => x.sessionId)).toEqual([root, child, r.sessionId]);
    expect(tip).toBe(r.sessionId);
    expect(await s.getSessionId()).toBe(id);
  });

  it('K3: a conversation another process deleted answers NotFoundError and is not created again behind its back', async () => {
    const { client, seen } = recording();
    const events: LineageSessionEvent[] = [];
    const id = `deleted-${randomUUID().slice(0, 8)}`;
    const s = new LineageSession({ client, sessionId: id, onEvent: (e) => events.push(e) });
    await s.addItems(exchange(4));
    await other.deleteConversation(id);
    seen.length = 0;

    await expect(s.addItems(exchange(2, 'lost'))).rejects.toBeInstanceOf(NotFoundError);
    await expect(s.getItems()).rejects.toBeInstanceOf(NotFoundError);
    await expect(s.getItems(2)).rejects.toBeInstanceOf(NotFoundError);
    await expect(s.popItem()).rejects.toBeInstanceOf(NotFoundError);
    await expect(s.compact()).rejects.toBeInstanceOf(NotFoundError);
    expect(await s.runCompaction({ force: true })).toBeNull();
    expect(events.at(-1)).toMatchObject({ type: 'compaction_failed', conversationId: id, error: expect.any(NotFoundError) });
    expect(await s.getSessionId()).toBe(id);
    expect(seen.filter((r) => r.method === 'PUT')).toEqual([]);
    await expect(other.getConversation(id)).rejects.toBeInstanceOf(NotFoundError);

    // Clearing it is the way back: already gone counts as done, and the next use creates it again.
    await s.clearSession();
    expect(await s.getItems()).toEqual([]);
    expect(await other.getConversation(id)).toMatchObject({ messageCount: 0 });
  });

  it("K1/K2: two LineageSession objects (two clients) on sessionId 'user_123' see each other's items and survive the other's rotation without any 404 or 409", async () => {
    const key = await tenant();
    const [ra, rb] = [recording(key), recording(key)];
    const a = new LineageSession({ client: ra.client, sessionId: 'user_123' });
    const b = new LineageSession({ client: rb.client, sessionId: 'user_123' });
    const [x1, x2, x3, x4] = [exchange(6, 'a1'), exchange(6, 'b1'), exchange(2, 'b2'), exchange(2, 'a2')];

    await Promise.all([a.getSessionId(), b.getSessionId()]); // two first uses at once: one conversation (K1)
    expect(a.liveSessionId).toBe(b.liveSessionId);
    await a.addItems(x1);
    expect(await b.getItems()).toEqual(x1);
    await b.addItems(x2);
    expect(await a.getItems()).toEqual([...x1, ...x2]);

    const rotated = await a.compact({ mode: 'rotate', keepLast: 2 });
    expect(rotated).toMatchObject({ outcome: 'compressed', mode: 'rotate' });
    await b.addItems(x3); // b still knows the parent: the service puts it on the child
    expect(b.liveSessionId).toBe(rotated.sessionId);
    expect((await a.getItems()).slice(-2)).toEqual(x3);

    const inPlace = await b.compact({ mode: 'in_place', keepLast: 2 });
    expect(inPlace).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: rotated.sessionId });
    await a.addItems(x4);
    const [seenByA, seenByB] = await Promise.all([a.getItems(), b.getItems()]);
    expect(seenByA).toEqual(seenByB);
    expect(seenByA.slice(-4)).toEqual([...x3, ...x4]);
    expect([await a.getSessionId(), await b.getSessionId()]).toEqual(['user_123', 'user_123']);
    expect(a.liveSessionId).toBe(b.liveSessionId);
    const bad = [...ra.seen, ...rb.seen].filter((r) => r.status === undefined || r.status >= 400);
    expect(bad.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([]);
  });

  it('K3: the same id in two tenants is two conversations', async () => {
    const [k1, k2] = await Promise.all([tenant(), tenant()]);
    const one = new LineageSession({ client: recording(k1).client, sessionId: 'user_123' });
    const two = new LineageSession({ client: recording(k2).client, sessionId: 'user_123' });
    await one.addItems(exchange(2, 'tenant one'));
    await two.addItems(exchange(3, 'tenant two'));
    expect(await one.getItems()).toEqual(exchange(2, 'tenant one'));
    expect(await two.getItems()).toEqual(exchange(3, 'tenant two'));
    expect(one.liveSessionId).not.toBe(two.liveSessionId);
    await one.clearSession();
    expect(await two.getItems()).toEqual(exchange(3, 'tenant two'));
    await expect(new LineageClient({ baseUrl: service.baseUrl, apiKey: k1 }).getConversation('user_123')).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });
});
