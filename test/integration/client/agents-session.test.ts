// LineageSession (the @openai/agents-core Session) against the real service: what each Session
// method sends to the conversation routes (SPEC K1-K3), compaction, and a real run(). What it
// does while other processes rotate, compact or delete its conversation: agents-conversation.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunks, LineageClient, LineageError, LineageNetworkError, NotFoundError } from '../../../lib/client/index.js';
import { LineageSession, type LineageSessionEvent } from '../../../lib/client/agents.js';
import { createOpsAgent, createRunner, question } from '../../../infra/examples/ops-agent.js';
import { exchange, message, recording as recordingOn, type Seen } from '../../support/client/agents-fixtures.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';

let service: LocalService;
let apiKey: string;
let other: LineageClient;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  apiKey = await service.createApiKey(`s-${randomUUID().slice(0, 8)}`);
  other = new LineageClient({ baseUrl: service.baseUrl, apiKey });
});

afterAll(async () => {
  await service?.stop();
});

const recording = (fail?: (r: Seen) => boolean) => recordingOn(service.baseUrl, apiKey, fail);
const stored = async (s: LineageSession) => (await other.readConversation(await s.getSessionId())).items;

describe('LineageSession: the Session methods', () => {
  it('K1: the first use creates one "responses" conversation with one PUT, however many calls race for it', async () => {
    const { client, seen } = recording();
    const events: LineageSessionEvent[] = [];
    const s = new LineageSession({ client, source: 'agents-test', onEvent: (e) => events.push(e) });
    expect(s.conversationId).toBeUndefined();
    const answers = await Promise.all([s.getSessionId(), s.getItems(), s.addItems(exchange(2)).then(() => s.getSessionId())]);
    const id = s.conversationId!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect([answers[0], answers[2]]).toEqual([id, id]);
    expect(seen.filter((r) => r.method === 'PUT').map((r) => r.path)).toEqual([`/conversations/${id}`]);
    expect(await other.getConversation(id)).toMatchObject({ format: 'responses', source: 'agents-test', liveSessionId: s.liveSessionId });
    expect(events.filter((e) => e.type === 'created')).toEqual([{ type: 'created', conversationId: id, sessionId: s.liveSessionId }]);
  });

  it('K1: a given sessionId is the conversation id: created under it on first use, answered by getSessionId()', async () => {
    const id = `user_${randomUUID().slice(0, 8)}@example.com`;
    const { client, seen } = recording();
    const s = new LineageSession({ client, sessionId: id, metadata: { plan: 'pro' } });
    expect(s.conversationId).toBe(id);
    expect(seen).toEqual([]);
    await s.addItems(exchange(2));
    expect(await s.getSessionId()).toBe(id);
    const path = `/conversations/${encodeURIComponent(id)}`;
    expect(seen.map((r) => `${r.method} ${r.path}`)).toEqual([`PUT ${path}`, `POST ${path}/messages`]);
    expect(await other.getConversation(id)).toMatchObject({ conversationId: id, messageCount: 2, metadata: { plan: 'pro' } });
  });

  it('K1: a bad id is refused before any request, with an error naming the rule', async () => {
    const { client, seen } = recording();
    // '.' and '..' fit the characters but a URL resolves them away: no request could name them.
    for (const bad of ['', 'has space', 'a/b', 'ü', 'x'.repeat(129), 'query?x=1', '.', '..']) {
      expect(() => new LineageSession({ client, sessionId: bad }), JSON.stringify(bad)).toThrow(
        /is not a conversation id \(1-128 characters of letters, digits and "\._:@-", not "\." or "\.\."\)/,
      );
    }
    expect(await new LineageSession({ client, sessionId: '...' }).getSessionId()).toBe('...');
    const longest = `${'a'.repeat(120)}._:@-789`;
    expect(longest).toHaveLength(128);
    expect(await new LineageSession({ client, sessionId: longest }).getSessionId()).toBe(longest);
    expect(seen.map((r) => r.method)).toEqual(['PUT', 'PUT']);
  });

  it('K1/A1: a conversation of another format is a clear error, not a silent mix', async () => {
    const chatConversation = `chat-${randomUUID().slice(0, 8)}`;
    await other.putConversation(chatConversation, { format: 'chat' });
    const chatRoot = (await other.createSession({ format: 'chat' })).sessionId; // a chain made with POST /sessions: its root id is its conversation id
    for (const id of [chatConversation, chatRoot]) {
      const err = await new LineageSession({ client: other, sessionId: id }).getItems().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LineageError);
      expect((err as Error).message).toMatch(/LineageSession needs a conversation of "responses" items.*holds chat items/);
    }
    expect((await other.getConversation(chatConversation)).messageCount).toBe(0);
  });

  it('A5: getItems(limit) reads ?tail=limit; getItems() pages through the whole transcript; one request each', async () => {
    const { client, seen } = recording();
    const s = new LineageSession({ client });
    const items = exchange(12);
    await s.addItems(items);
    const id = s.conversationId!;
    seen.length = 0;
    expect(await s.getItems(3)).toEqual(items.slice(-3));
    expect(seen.map((r) => `${r.method} ${r.path}?${r.query.toString()}`)).toEqual([`GET /conversations/${id}/messages?tail=3`]);
    seen.length = 0;
    expect(await s.getItems()).toEqual(items);
    expect(seen.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /conversations/${id}/messages`]);
    expect(await s.getItems(0)).toEqual([]);
    expect(await s.getItems(5000)).toEqual(items);
  });

  it('A7/A3: addItems of 250 items is one idempotent append: no other writer can land inside it', async () => {
    const { client, seen } = recording();
    const s = new LineageSession({ client });
    await s.getSessionId();
    seen.length = 0;
    const items = exchange(250);
    await s.addItems(items);
    expect(seen.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(await stored(s)).toEqual(items);
  });

  it('A7/F1: addItems splits only past the 5 MB body limit, so no append is refused for its size', async () => {
    const { client, seen } = recording();
    const s = new LineageSession({ client });
    await s.getSessionId();
    seen.length = 0;
    const items = Array.from({ length: 300 }, (_, i) => message(i % 2 ? 'assistant' : 'user', `big ${i} ${'x'.repeat(20_000)}`));
    await s.addItems(items);
    expect(seen.filter((r) => r.method === 'POST')).toHaveLength(2);
    expect(await stored(s)).toEqual(items);
  }, 120_000);

  it('A5: getItems(1000) of items too big for one response still answers the latest 1000', async () => {
    const s = new LineageSession({ client: other });
    const items = Array.from({ length: 1100 }, (_, i) => message(i % 2 ? 'assistant' : 'user', `item ${i} ${'y'.repeat(5000)}`));
    await s.addItems(items);
    // The service's own tail is cut at 4.5 MB...
    const tail = await other.listConversationMessages(s.conversationId!, { tail: 1000 });
    expect(tail).toMatchObject({ truncated: true });
    expect(tail.messages.length).toBeLessThan(1000);
    // ...and the session pages to complete it.
    expect(await s.getItems(1000)).toEqual(items.slice(-1000));
  }, 120_000);

  it('A3: when the network dies between two appends of one addItems, the conversation holds the first whole, nothing of the second', async () => {
    let posts = 0;
    const { client, seen } = recording((r) => r.method === 'POST' && r.path.endsWith('/messages') && ++posts > 1);
    const s = new LineageSession({ client });
    await s.getSessionId();
    // Over 5 MB of JSON: two appends (one append holds any count, A7; only the body limit splits).
    const items = Array.from({ length: 300 }, (_, i) => message(i % 2 ? 'assistant' : 'user', `big ${i} ${'x'.repeat(20_000)}`));
    const first = [...chunks(items)][0]!.length;
    const err = await s.addItems(items).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LineageNetworkError);
    expect(err).toMatchObject({ mayHaveApplied: true });
    // The second append was retried with its own key, the same each time.
    const keys = seen.filter((r) => r.method === 'POST' && r.path.endsWith('/messages')).map((r) => r.key);
    expect(keys).toHaveLength(3);
    expect(keys[1]).toBe(keys[2]);
    expect((err as LineageNetworkError).idempotencyKey).toBe(keys[2]);
    expect(await stored(s)).toEqual(items.slice(0, first));
  });

  it('A6: popItem removes and returns the last item; an empty conversation answers undefined', async () => {
    const s = new LineageSession({ client: other });
    const items = exchange(3);
    await s.addItems(items);
    expect(await s.popItem()).toEqual(items[2]);
    expect(await s.getItems()).toEqual(items.slice(0, 2));
    await s.popItem();
    await s.popItem();
    expect(await s.popItem()).toBeUndefined();
  });

  it('K3/A6: clearSession deletes every session of the chain; the next use creates the conversation again, empty, under the same id', async () => {
    const events: LineageSessionEvent[] = [];
    const s = new LineageSession({ client: other, sessionId: `clear-${randomUUID().slice(0, 8)}`, onEvent: (e) => events.push(e) });
    await s.addItems(exchange(14));
    const root = s.liveSessionId!;
    await s.compact({ mode: 'rotate', keepLast: 2 });
    const child = s.liveSessionId!;
    expect(child).not.toBe(root);
    await s.clearSession();
    expect(events.at(-1)).toEqual({ type: 'cleared', conversationId: s.conversationId });
    await expect(other.getSession(root)).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.getSession(child)).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.getConversation(s.conversationId!)).rejects.toBeInstanceOf(NotFoundError);
    expect(s.liveSessionId).toBeUndefined();
    expect(await s.getItems()).toEqual([]);
    expect(await s.getSessionId()).toBe(s.conversationId);
    expect([root, child]).not.toContain(s.liveSessionId);
    expect(events.filter((e) => e.type === 'created')).toHaveLength(2);
    expect(await other.getConversation(s.conversationId!)).toMatchObject({ rootSessionId: s.liveSessionId, messageCount: 0, sessions: 1 });
  });
});

describe('LineageSession compaction', () => {
  it('compact() in place keeps the live session; rotate moves it to the child; the conversation id stays', async () => {
    const s = new LineageSession({ client: other });
    await s.addItems(exchange(16));
    const id = await s.getSessionId();
    const live = s.liveSessionId!;
    expect(await s.compact({ mode: 'in_place', keepLast: 2 })).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: live });
    expect(s.liveSessionId).toBe(live);
    await s.addItems(exchange(8));
    const rotated = await s.compact({ mode: 'rotate', keepLast: 2 });
    expect(rotated).toMatchObject({ outcome: 'compressed', mode: 'rotate', previousSessionId: live });
    expect(s.liveSessionId).toBe(rotated.sessionId);
    expect(await s.getItems()).toEqual(rotated.messages);
    expect(await s.getSessionId()).toBe(id);
  });

  it("runCompaction (the SDK hook) compacts only when forced or past the policy's threshold, and adds no usage", async () => {
    const { client, seen } = recording();
    const plain = new LineageSession({ client });
    await plain.addItems(exchange(10));
    expect(await plain.runCompaction()).toBeNull();
    expect(seen.some((r) => r.path.endsWith('/compress'))).toBe(false);
    expect(await plain.runCompaction({ force: true })).toBeNull();
    expect(seen.filter((r) => r.path.endsWith('/compress'))).toHaveLength(1);

    const { client: c2, seen: seen2 } = recording();
    const policy = new LineageSession({ client: c2, compaction: { mode: 'rotate', keepLast: 2, afterTurnAboveItems: 12 } });
    await policy.addItems(exchange(10));
    await policy.runCompaction();
    expect(seen2.some((r) => r.path.endsWith('/compress'))).toBe(false);
    const before = policy.liveSessionId;
    await policy.addItems(exchange(4));
    await policy.runCompaction();
    expect(seen2.filter((r) => r.path.endsWith('/compress'))).toHaveLength(1);
    expect(policy.liveSessionId).not.toBe(before);
  });
});

describe('LineageSession under the Agents SDK runner', () => {
  it("A1: a run() with a tool call stores exactly the run's history, and the next run reads it back", async () => {
    const { client, seen } = recording();
    const s = new LineageSession({ client });
    const runner = createRunner();
    const agent = createOpsAgent();
    const first = await runner.run(agent, question('r1', 'search-indexer'), { session: s });
    expect(String(first.finalOutput)).toContain('[r1] search-indexer is failing');
    const afterFirst = await stored(s);
    expect(afterFirst.map((i) => (i as { type?: string }).type)).toEqual(['message', 'function_call', 'function_call_result', 'message']);
    expect(JSON.parse(JSON.stringify(first.history))).toEqual(afterFirst);

    seen.length = 0;
    const second = await runner.run(agent, question('r2', 'auth-gateway'), { session: s });
    expect(String(second.finalOutput)).toContain('[r2] auth-gateway is healthy');
    // The run read the stored history (one full read) and appended its own items.
    expect(seen.some((r) => r.method === 'GET' && r.path === `/conversations/${s.conversationId}/messages`)).toBe(true);
    expect(await stored(s)).toEqual(JSON.parse(JSON.stringify(second.history)));
  });
});
