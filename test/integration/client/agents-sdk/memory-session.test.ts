// Ported from openai/openai-agents-js packages/agents-core/test/memorySession.test.ts at commit
// 6d0c61a5f62a5ed8142996a25b33446c810f84b3: what the SDK's reference Session promises (store and
// read back, limits, pop, clear, copies not references, no item contents in diagnostics, refusing
// values it cannot keep), rewritten by us against LineageSession over real HTTP.
//
// Like upstream, the id is the session's for the object's whole life: LineageSession's id is a
// conversation id (SPEC K1), kept across rotations, in-place compactions and clearSession (the
// next call creates the conversation again, empty, under the same id), as MemorySession keeps its id.
//
// Differences by design, asserted as ours:
// - No `initialItems`: history is seeded by appending to a conversation and handing its id in.
// - applyHistoryMutations / applyHistoryTransaction (upstream's transaction tests) are ported in
//   history-transactions.test.ts (SPEC X1). Here: addItems refuses values JSON cannot return as
//   they are (Date, cycles, bigint, holes, binary other than Uint8Array) before anything is sent,
//   with an error that names where they are and not what they hold; Uint8Array round-trips.
import { randomUUID } from 'node:crypto';
import { isSessionHistoryRewriteAwareSession, isSessionHistoryTransactionAwareSession, type AgentInputItem } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LineageClient, UnsupportedValueError } from '../../../../lib/client/index.js';
import { LineageSession, type LineageSessionEvent } from '../../../../lib/client/agents.js';
import { Wire } from '../../../support/client/wire.js';
import { startLocalService, type LocalService } from '../../../support/local-service.js';

let service: LocalService;
let apiKey: string;
let other: LineageClient;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  apiKey = await service.createApiKey(`sdk-mem-${randomUUID().slice(0, 8)}`);
  other = new LineageClient({ baseUrl: service.baseUrl, apiKey });
}, 180_000); // the build and serverless-offline, on a busy machine

afterAll(async () => {
  await service?.stop();
});

const createUserMessage = (text: string): AgentInputItem => ({ role: 'user', content: [{ type: 'input_text', text }] });

/** A "responses" conversation holding `items` (upstream: `new MemorySession({ sessionId, initialItems })`). */
async function seeded(items: AgentInputItem[]): Promise<string> {
  const id = `session-${randomUUID().slice(0, 8)}`;
  await other.putConversation(id, { format: 'responses' });
  await other.appendToConversation(id, items);
  return id;
}

describe('MemorySession tests, against LineageSession', () => {
  it('puts no item contents in its events or warnings (upstream: redacts item contents in debug logs)', async () => {
    const secret = 'SECRET_MEMORY_SESSION_VALUE_123';
    const events: LineageSessionEvent[] = [];
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const s = new LineageSession({ client: other, sessionId: await seeded([createUserMessage(secret)]), onEvent: (e) => events.push(e) });
      expect(await s.getItems()).toEqual([createUserMessage(secret)]);
      await s.addItems([createUserMessage(`${secret}-added`)]);
      expect(await s.popItem()).toEqual(createUserMessage(`${secret}-added`));
      const refused = await s
        .addItems([{ ...createUserMessage(secret), providerData: { bytes: new Uint16Array([1]) } }])
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(UnsupportedValueError);
      await s.clearSession();
      // (A `compacted` event carries the service's answer, which holds the new transcript: asked for, not logged.)
      expect(events.map((e) => e.type)).toEqual(['appended', 'cleared']);
      expect(JSON.stringify(events)).not.toContain(secret);
      expect((refused as Error).message).not.toContain(secret);
      expect(JSON.stringify(warn.mock.calls)).not.toContain(secret);
    } finally {
      warn.mockRestore();
    }
  });

  it('stores and retrieves items', async () => {
    const initialItems = [createUserMessage('hello')];
    const id = await seeded(initialItems);
    const session = new LineageSession({ client: other, sessionId: id });

    expect(await session.getSessionId()).toBe(id);
    expect(await session.getItems()).toEqual(initialItems);

    const newItems = [createUserMessage('one'), createUserMessage('two')];
    await session.addItems(newItems);
    expect(await session.getItems()).toEqual([...initialItems, ...newItems]);
    expect(await session.getItems(2)).toEqual(newItems);

    expect(await session.popItem()).toEqual(newItems[1]);
    expect(await session.getItems()).toEqual([...initialItems, newItems[0]]);

    await session.clearSession();
    expect(await session.getItems()).toEqual([]);
    expect(await session.getItems(3)).toEqual([]);
    expect(await session.popItem()).toBeUndefined();
    // As upstream: the id survives the clear (ours: the conversation is created again under it).
    expect(await session.getSessionId()).toBe(id);
  });

  it('returns copies, so external mutations do not persist', async () => {
    const initial = createUserMessage('start');
    const session = new LineageSession({ client: other, sessionId: await seeded([initial]) });

    const items = await session.getItems();
    expect(items[0]).not.toBe(initial);
    (items[0] as { content: unknown }).content = 'mutated';
    expect(await session.getItems()).toEqual([createUserMessage('start')]);

    const next = createUserMessage('next');
    await session.addItems([next]);
    (next as { content: unknown }).content = 'mutated';
    expect(await session.getItems()).toEqual([createUserMessage('start'), createUserMessage('next')]);

    const popped = await session.popItem();
    expect(popped).toEqual(createUserMessage('next'));
    (popped as { content: unknown }).content = 'mutated';
    expect(await session.getItems()).toEqual([createUserMessage('start')]);
  });

  it('X1: offers history rewrite and transactions (type guards)', () => {
    const session = new LineageSession({ client: other });
    expect(isSessionHistoryRewriteAwareSession(session)).toBe(true);
    expect(isSessionHistoryTransactionAwareSession(session)).toBe(true);
  });

  it('refuses values it cannot keep (Date, cycle, bigint, hole, NaN, Map) before anything is sent, naming where', async () => {
    const start = createUserMessage('start');
    const id = await seeded([start]);
    const w = new Wire(service.baseUrl, apiKey);
    const session = new LineageSession({ client: w.client(), sessionId: id });
    await session.getSessionId();
    w.seen.length = 0;

    const withDate = { ...createUserMessage('date'), providerData: { timestamp: new Date(0) } };
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const withCycle = { ...createUserMessage('cyclic'), providerData: cycle };
    const withBigInt = { ...createUserMessage('bigint'), providerData: { value: 42n } };
    const withNaN = { ...createUserMessage('nan'), providerData: { score: Number.NaN } };
    const withMap = { ...createUserMessage('map'), providerData: { seen: new Map([['a', 1]]) } };
    const cases: [AgentInputItem[], string][] = [
      [[withDate], 'items[0].providerData.timestamp'],
      [[withCycle], 'items[0].providerData.self'],
      [[start, withBigInt], 'items[1].providerData.value'],
      [new Array<AgentInputItem>(1), 'items[0]'],
      [[withNaN], 'items[0].providerData.score'],
      [[withMap], 'items[0].providerData.seen'],
    ];
    for (const [items, path] of cases) {
      const err = await session.addItems(items).catch((e: unknown) => e);
      expect(err, path).toBeInstanceOf(UnsupportedValueError);
      expect(err).toMatchObject({ path });
    }
    expect(w.seen).toEqual([]);
    expect(await session.getItems()).toEqual([start]);
  });

  // As upstream: Uint8Array (shared-backed too) is kept (stored as {"$bytes": base64}, read back as
  // bytes); other binary is refused, because JSON would turn it into {"0":3,"1":7}.
  it('refuses binary other than Uint8Array (Uint16Array, ArrayBuffer, DataView) with a clear error, nothing sent', async () => {
    const w = new Wire(service.baseUrl, apiKey);
    const session = new LineageSession({ client: w.client() });
    const values = [new Uint16Array([300]), new ArrayBuffer(2), new DataView(new ArrayBuffer(1))];
    for (const bytes of values) {
      const item = { ...createUserMessage('binary'), providerData: { bytes } };
      const err = await session.addItems([item]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UnsupportedValueError);
      expect((err as Error).message).toMatch(/items\[0\]\.providerData\.bytes is binary \(\w+\).*nothing was sent.*base64/);
    }
    // Nothing was sent: not even the create of the conversation a first addItems makes (no id was even chosen).
    expect(w.seen).toEqual([]);
    expect(session.conversationId).toBeUndefined();
    // The low-level client refuses the same way.
    const s = await other.createSession({ format: 'responses' });
    await expect(other.append(s.sessionId, [{ type: 'message', role: 'user', content: 'x', data: new Uint8Array([1]) }])).rejects.toThrow(
      UnsupportedValueError,
    );
    expect((await other.getSession(s.sessionId)).messageCount).toBe(0);
  });

  it('canonicalizes ordinary object prototypes: a null-prototype object is stored and read back as a plain one', async () => {
    const session = new LineageSession({ client: other });
    const appended = {
      ...createUserMessage('canonical'),
      providerData: Object.assign(Object.create(null) as object, { source: 'provider' }),
    };
    await session.addItems([appended]);
    const [roundTripped] = await session.getItems();
    expect(roundTripped).toEqual({ ...createUserMessage('canonical'), providerData: { source: 'provider' } });
    expect(Object.getPrototypeOf((roundTripped as { providerData: object }).providerData)).toBe(Object.prototype);
  });
});
