// LineageSession (the @openai/agents-core Session) against the real service: what each
// Session method sends, how it follows rotations made elsewhere, compaction, and a real run().
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentInputItem } from '@openai/agents-core';
import { chunks, LineageClient, LineageError, LineageNetworkError, NotFoundError } from '../../../lib/client/index.js';
import { LineageSession, type LineageSessionEvent } from '../../../lib/client/agents.js';
import { createOpsAgent, createRunner, question } from '../../../infra/examples/ops-agent.js';
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

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  key: string | null;
}

/** A client whose every request is recorded, optionally failing some. */
function recording(fail?: (r: Seen) => boolean) {
  const seen: Seen[] = [];
  const client = new LineageClient({
    baseUrl: service.baseUrl,
    apiKey,
    retry: { maxAttempts: 2, baseDelayMs: 1 },
    fetch: (req) => {
      const url = new URL(req.url);
      const r = { method: req.method, path: url.pathname, query: url.searchParams, key: req.headers.get('idempotency-key') };
      seen.push(r);
      if (fail?.(r)) return Promise.reject(new TypeError('fetch failed', { cause: new Error('socket hang up') }));
      return fetch(req);
    },
  });
  return { client, seen };
}

const message = (role: 'user' | 'assistant', text: string): AgentInputItem =>
  role === 'user'
    ? { type: 'message', role, content: [{ type: 'input_text', text }] }
    : { type: 'message', role, status: 'completed', content: [{ type: 'output_text', text }] };
const exchange = (n: number): AgentInputItem[] =>
  Array.from({ length: n }, (_, i) =>
    message(
      i % 2 ? 'assistant' : 'user',
      `message ${i}: ${'the nightly export failed on the ledger table because the lock timed out; '.repeat(3)}`,
    ),
  );

describe('LineageSession: the Session methods', () => {
  it('A1: the first use creates one "responses" session, however many calls race for it', async () => {
    const { client, seen } = recording();
    const events: LineageSessionEvent[] = [];
    const s = new LineageSession({ client, source: 'agents-test', onEvent: (e) => events.push(e) });
    expect(s.currentSessionId).toBeUndefined();
    const ids = await Promise.all([s.getSessionId(), s.getItems(), s.addItems(exchange(2)).then(() => s.currentSessionId)]);
    expect(new Set(ids.filter((x) => typeof x === 'string'))).toEqual(new Set([s.currentSessionId]));
    expect(seen.filter((r) => r.method === 'POST' && r.path === '/sessions')).toHaveLength(1);
    expect(await other.getSession(s.currentSessionId!)).toMatchObject({ format: 'responses', source: 'agents-test' });
    expect(events.filter((e) => e.type === 'created')).toHaveLength(1);
  });

  it('A5: getItems(limit) reads ?tail=limit; getItems() pages through the whole transcript', async () => {
    const { client, seen } = recording();
    const s = new LineageSession({ client });
    const items = exchange(12);
    await s.addItems(items);
    seen.length = 0;
    expect(await s.getItems(3)).toEqual(items.slice(-3));
    expect(seen.find((r) => r.path.endsWith('/messages'))?.query.get('tail')).toBe('3');
    // On a live session one request answers: the page carries the session it was read with.
    expect(seen.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /sessions/${s.currentSessionId}/messages`]);
    seen.length = 0;
    expect(await s.getItems()).toEqual(items);
    expect(seen.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /sessions/${s.currentSessionId}/messages`]);
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
    expect(await other.readAll(s.currentSessionId!)).toEqual(items);
  });

  it('A7/F1: addItems splits only past the 5 MB body limit, so no append is refused for its size', async () => {
    const { client, seen } = recording();
    const s = new LineageSession({ client });
    await s.getSessionId();
    seen.length = 0;
    const items = Array.from({ length: 300 }, (_, i) => message(i % 2 ? 'assistant' : 'user', `big ${i} ${'x'.repeat(20_000)}`));
    await s.addItems(items);
    expect(seen.filter((r) => r.method === 'POST')).toHaveLength(2);
    expect(await other.readAll(s.currentSessionId!)).toEqual(items);
  }, 120_000);

  it('A5: getItems(1000) of items too big for one response still answers the latest 1000', async () => {
    const s = new LineageSession({ client: other });
    const items = Array.from({ length: 1100 }, (_, i) => message(i % 2 ? 'assistant' : 'user', `item ${i} ${'y'.repeat(5000)}`));
    await s.addItems(items);
    // The service's own tail is cut at 4.5 MB...
    expect((await other.tail(s.currentSessionId!, 1000)).length).toBeLessThan(1000);
    // ...and the session pages to complete it.
    expect(await s.getItems(1000)).toEqual(items.slice(-1000));
  }, 120_000);

  it('A3: when the network dies between two appends of one addItems, the session holds the first whole, nothing of the second', async () => {
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
    expect(await other.readAll(s.currentSessionId!)).toEqual(items.slice(0, first));
  });

  it('A6: popItem removes and returns the last item; an empty session answers undefined', async () => {
    const s = new LineageSession({ client: other });
    const items = exchange(3);
    await s.addItems(items);
    expect(await s.popItem()).toEqual(items[2]);
    expect(await s.getItems()).toEqual(items.slice(0, 2));
    await s.popItem();
    await s.popItem();
    expect(await s.popItem()).toBeUndefined();
  });

  it('A6: clearSession deletes the whole chain and the next use starts a new, empty session', async () => {
    const events: LineageSessionEvent[] = [];
    const s = new LineageSession({ client: other, onEvent: (e) => events.push(e) });
    await s.addItems(exchange(14));
    const root = s.currentSessionId!;
    await s.compact({ mode: 'rotate', keepLast: 2 });
    const child = s.currentSessionId!;
    expect(child).not.toBe(root);
    await s.clearSession();
    expect(events.find((e) => e.type === 'cleared')).toEqual({ type: 'cleared', deleted: [child, root] });
    await expect(other.getSession(root)).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.getSession(child)).rejects.toBeInstanceOf(NotFoundError);
    expect(s.currentSessionId).toBeUndefined();
    expect(await s.getItems()).toEqual([]);
    const fresh = await s.getSessionId();
    expect([root, child]).not.toContain(fresh);
  });

  it('A1: refuses a session of chat items', async () => {
    const chat = await other.createSession({ format: 'chat' });
    await expect(new LineageSession({ client: other, sessionId: chat.sessionId }).getItems()).rejects.toBeInstanceOf(LineageError);
  });
});

describe('LineageSession follows rotations made elsewhere', () => {
  async function rotatedElsewhere(): Promise<{
    s: LineageSession;
    seen: Seen[];
    root: string;
    child: string;
    events: LineageSessionEvent[];
  }> {
    const { client, seen } = recording();
    const events: LineageSessionEvent[] = [];
    const s = new LineageSession({ client, onEvent: (e) => events.push(e) });
    await s.addItems(exchange(14));
    const root = s.currentSessionId!;
    const child = (await other.compress(root, { mode: 'rotate', keepLast: 2 })).sessionId;
    seen.length = 0;
    return { s, seen, root, child, events };
  }

  it('getSessionId() answers the live tip (GET /lineage) and later appends go straight to it', async () => {
    const { s, seen, root, child } = await rotatedElsewhere();
    expect(s.currentSessionId).toBe(root);
    expect(await s.getSessionId()).toBe(child);
    await s.addItems(exchange(2));
    expect(seen.filter((r) => r.method === 'POST').map((r) => r.path)).toEqual([`/sessions/${child}/messages`]);
  });

  it('I4: addItems on the rotated session follows the 409 and lands once on the child', async () => {
    const { s, root, child, events } = await rotatedElsewhere();
    const items = exchange(2);
    await s.addItems(items);
    expect(events).toContainEqual({ type: 'followed', from: root, to: child, via: 'session_ended' });
    expect((await other.readAll(child)).slice(-2)).toEqual(items);
    expect(await other.getSession(root)).toMatchObject({ messageCount: 14 });
  });

  it("getItems() reads the live transcript, not the ended parent's", async () => {
    const { s, child, events } = await rotatedElsewhere();
    expect(await s.getItems()).toEqual(await other.readAll(child));
    expect(events.some((e) => e.type === 'followed' && e.via === 'lineage')).toBe(true);
    expect(s.currentSessionId).toBe(child);
  });

  it("A6: popItem on the rotated session pops the live session's last item", async () => {
    const { s, root, child } = await rotatedElsewhere();
    const last = (await other.readAll(child)).at(-1);
    expect(await s.popItem()).toEqual(last);
    expect(s.currentSessionId).toBe(child);
    expect(await other.getSession(root)).toMatchObject({ messageCount: 14 });
  });

  it('C4: compact() on the rotated session is adopted: it follows to the one child, which is not compacted again', async () => {
    const { s, child } = await rotatedElsewhere();
    const r = await s.compact({ mode: 'rotate' });
    expect(r).toMatchObject({ outcome: 'skipped', reason: 'adopted', sessionId: child });
    expect(s.currentSessionId).toBe(child);
    expect((await other.lineage(child)).chain).toHaveLength(2);
  });
});

describe('LineageSession compaction', () => {
  it('compact() in place keeps the id; rotate moves to the child', async () => {
    const s = new LineageSession({ client: other });
    await s.addItems(exchange(16));
    const id = s.currentSessionId!;
    expect(await s.compact({ mode: 'in_place', keepLast: 2 })).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: id });
    expect(s.currentSessionId).toBe(id);
    await s.addItems(exchange(8));
    const rotated = await s.compact({ mode: 'rotate', keepLast: 2 });
    expect(rotated).toMatchObject({ outcome: 'compressed', mode: 'rotate', previousSessionId: id });
    expect(s.currentSessionId).toBe(rotated.sessionId);
    expect(await s.getItems()).toEqual(rotated.messages);
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
    const before = policy.currentSessionId;
    await policy.addItems(exchange(4));
    await policy.runCompaction();
    expect(seen2.filter((r) => r.path.endsWith('/compress'))).toHaveLength(1);
    expect(policy.currentSessionId).not.toBe(before);
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
    const stored = await other.readAll(s.currentSessionId!);
    expect(stored.map((i) => (i as { type?: string }).type)).toEqual(['message', 'function_call', 'function_call_result', 'message']);
    expect(JSON.parse(JSON.stringify(first.history))).toEqual(stored);

    seen.length = 0;
    const second = await runner.run(agent, question('r2', 'auth-gateway'), { session: s });
    expect(String(second.finalOutput)).toContain('[r2] auth-gateway is healthy');
    // The run read the stored history (one full read) and appended its own items.
    expect(seen.some((r) => r.method === 'GET' && r.path.endsWith('/messages'))).toBe(true);
    expect(await other.readAll(s.currentSessionId!)).toEqual(JSON.parse(JSON.stringify(second.history)));
  });
});
