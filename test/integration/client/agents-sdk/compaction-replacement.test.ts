// SPEC X2 (issue 30): LineageSession's replaceHistoryWithCompaction and the SDK's compaction
// ownership receipts (@openai/agents-core 0.20 OpenAIResponsesCompactionOwnershipAwareSession),
// over real HTTP (serverless-offline, DynamoDB Local, Redis).
//
// The SDK's own tests of these capabilities, ported: session-persistence-compaction.test.ts.
import { randomUUID } from 'node:crypto';
import {
  isOpenAIResponsesCompactionAwareSession,
  isOpenAIResponsesCompactionOwnershipAwareSession,
  isSessionHistoryRewriteAwareSession,
  isSessionHistoryTransactionAwareSession,
  type AgentInputItem,
} from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LineageClient, type CompactionEngine } from '../../../../lib/client/index.js';
import { LineageSession } from '../../../../lib/client/agents.js';
import { startLocalService, type LocalService } from '../../../support/local-service.js';

let service: LocalService;
let other: LineageClient;
let apiKey: string;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  apiKey = await service.createApiKey(`sdk-x2-${randomUUID().slice(0, 8)}`);
  other = new LineageClient({ baseUrl: service.baseUrl, apiKey });
}, 180_000);

afterAll(async () => {
  await service?.stop();
});

const message = (text: string): AgentInputItem => ({
  type: 'message',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text }],
});
const user = (text: string): AgentInputItem => ({ role: 'user', content: [{ type: 'input_text', text }] });
const compactionItem = (id: string): AgentInputItem => ({ type: 'compaction', id, encrypted_content: 'ciphertext' });

/** A new conversation holding `items`, appended by another client. */
async function seeded(items: AgentInputItem[], client = other): Promise<{ id: string; session: LineageSession }> {
  const id = `x2-${randomUUID().slice(0, 8)}`;
  await other.putConversation(id, { format: 'responses' });
  if (items.length) await other.appendToConversation(id, items);
  return { id, session: new LineageSession({ client, sessionId: id }) };
}

/** A client that records every request (method and path) it sends. */
function recording(): { client: LineageClient; sent: string[] } {
  const sent: string[] = [];
  const client = new LineageClient({
    baseUrl: service.baseUrl,
    apiKey,
    fetch: (req) => {
      sent.push(`${req.method} ${new URL(req.url).pathname}`);
      return fetch(req);
    },
  });
  return { client, sent };
}

describe('X2: the SDK capabilities (type guards)', () => {
  test('X2: LineageSession is transaction-, rewrite-, compaction- and ownership-aware', () => {
    const s = new LineageSession({ client: other });
    expect(isSessionHistoryTransactionAwareSession(s)).toBe(true);
    expect(isSessionHistoryRewriteAwareSession(s)).toBe(true);
    expect(isOpenAIResponsesCompactionAwareSession(s)).toBe(true);
    expect(isOpenAIResponsesCompactionOwnershipAwareSession(s)).toBe(true);
    expect(typeof s.replaceHistoryWithCompaction).toBe('function');
  });
});

describe('X2: replaceHistoryWithCompaction (ours)', () => {
  test('X2: ends with exactly the items, keeps the conversation and its session, sends no delete (begin, heartbeat, commit)', async () => {
    const { client, sent } = recording();
    const { id, session } = await seeded([user('task'), message('a'), message('b'), message('c')], client);
    const before = await session.getItems();
    const live = session.liveSessionId;
    // No user turn in it and larger than what it replaces: written as it is all the same (no C8 anchor, no C7 `grown`).
    const items = [compactionItem(`cmp_${'x'.repeat(2000)}`), message('kept')];
    sent.length = 0;
    await session.replaceHistoryWithCompaction(items);
    expect(await session.getItems()).toEqual(items);
    expect(before).toHaveLength(4);
    expect(await session.getSessionId()).toBe(id);
    expect(session.liveSessionId).toBe(live);
    expect((await other.getConversation(id)).liveSessionId).toBe(live);
    expect(sent.filter((r) => !r.startsWith('GET'))).toEqual([
      `POST /conversations/${id}/compactions`,
      expect.stringMatching(new RegExp(`^POST /conversations/${id}/compactions/[^/]+/heartbeat$`)),
      expect.stringMatching(new RegExp(`^POST /conversations/${id}/compactions/[^/]+/commit$`)),
    ]);
  });

  test('X2: another process appended since this session read: it throws (stale) and nothing is written', async () => {
    const { id, session } = await seeded([user('task'), message('a')]);
    await session.getItems();
    await other.appendToConversation(id, [message('from B')]);
    await expect(session.replaceHistoryWithCompaction([compactionItem('cmp_stale'), message('kept')])).rejects.toThrow(
      'replaceHistoryWithCompaction: nothing was replaced (skipped stale)',
    );
    expect((await other.readConversation(id)).items).toEqual([user('task'), message('a'), message('from B')]);
  });

  test('X2/I4: an item another process appends during the replacement (after its begin) is kept after the items', async () => {
    const { id } = await seeded([user('task'), message('a')]);
    const racing = new LineageClient({
      baseUrl: service.baseUrl,
      apiKey,
      fetch: async (req) => {
        if (req.method === 'POST' && req.url.endsWith('/commit')) await other.appendToConversation(id, [message('from B')]);
        return fetch(req);
      },
    });
    const session = new LineageSession({ client: racing, sessionId: id });
    await session.getItems();
    const items = [compactionItem('cmp_i4'), message('kept')];
    await session.replaceHistoryWithCompaction(items);
    expect((await other.readConversation(id)).items).toEqual([...items, message('from B')]);
  });

  test('X2: on an empty conversation the items are its first', async () => {
    const { session } = await seeded([]);
    await session.getItems();
    await session.replaceHistoryWithCompaction([compactionItem('cmp_empty')]);
    expect(await session.getItems()).toEqual([compactionItem('cmp_empty')]);
  });
});

describe('X2: compaction ownership receipts (ours)', () => {
  const engineCounting = () => {
    const calls: number[] = [];
    const engine: CompactionEngine = ({ messages }) => {
      calls.push(messages.length);
      return [messages[0]!, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'summary' }] }];
    };
    return { calls, engine };
  };

  test('X2: a receipt our own append followed directly authorizes the compaction (the engine runs once)', async () => {
    const { calls, engine } = engineCounting();
    const { id } = await seeded([user('task'), message('a'), message('b')]);
    const session = new LineageSession({ client: other, sessionId: id, compaction: { engine } });
    const { items, ownership } = await session.getItemsWithCompactionOwnership();
    expect(items).toHaveLength(3);
    await session.addItemsWithCompactionOwnership([message('c'), message('d')], ownership);
    expect(await session.runCompaction({ force: true }, undefined, ownership)).toBeNull();
    expect(calls).toEqual([5]);
    expect(await session.getItems()).toHaveLength(2);
  });

  test('X2: a receipt made stale by another write still lets the append land, but authorizes no compaction', async () => {
    const { calls, engine } = engineCounting();
    const { id } = await seeded([user('task'), message('a')]);
    const session = new LineageSession({ client: other, sessionId: id, compaction: { engine } });
    const { ownership } = await session.getItemsWithCompactionOwnership();
    await other.appendToConversation(id, [message('from B')]);
    await session.addItemsWithCompactionOwnership([message('ours')], ownership);
    expect((await other.readConversation(id)).items).toEqual([user('task'), message('a'), message('from B'), message('ours')]);
    expect(await session.runCompaction({ force: true }, undefined, ownership)).toBeNull();
    // Stale for good: a later append directly after does not restore it.
    await session.addItemsWithCompactionOwnership([message('ours 2')], ownership);
    expect(await session.runCompaction({ force: true }, undefined, ownership)).toBeNull();
    expect(calls).toEqual([]);
    expect((await other.readConversation(id)).items).toHaveLength(5);
  });

  test('X2: a write after our append is found by the begin itself (expectedCount, no second read): skipped stale, nothing written', async () => {
    const { calls, engine } = engineCounting();
    const { id } = await seeded([user('task'), message('a')]);
    const events: unknown[] = [];
    const session = new LineageSession({ client: other, sessionId: id, compaction: { engine }, onEvent: (e) => events.push(e) });
    const { ownership } = await session.getItemsWithCompactionOwnership();
    await session.addItemsWithCompactionOwnership([message('ours')], ownership);
    await other.appendToConversation(id, [message('from B')]);
    expect(await session.runCompaction({ force: true }, undefined, ownership)).toBeNull();
    expect(calls).toEqual([]);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'compacted', response: expect.objectContaining({ outcome: 'skipped', reason: 'stale' }) }),
    );
    expect((await other.readConversation(id)).items).toHaveLength(4);
  });

  test('X2: another process popped and appended since the read (the count as read, not lastSeq): the begin refuses, the engine never runs, nothing is lost', async () => {
    const { calls, engine } = engineCounting();
    const { id } = await seeded([user('task'), message('a'), message('b')]);
    const events: unknown[] = [];
    const session = new LineageSession({ client: other, sessionId: id, compaction: { engine }, onEvent: (e) => events.push(e) });
    const { ownership } = await session.getItemsWithCompactionOwnership();
    await other.popConversation(id);
    await other.appendToConversation(id, [message('from B')]);
    expect(await session.runCompaction({ force: true }, undefined, ownership)).toBeNull();
    expect(calls).toEqual([]);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'compacted', response: expect.objectContaining({ outcome: 'skipped', reason: 'stale' }) }),
    );
    // And a replacement computed from that read is refused too: B's item stays.
    await expect(session.replaceHistoryWithCompaction([compactionItem('cmp_aba'), message('kept')])).rejects.toThrow('skipped stale');
    expect((await other.readConversation(id)).items).toEqual([user('task'), message('a'), message('from B')]);
  });

  test('X2: addItemsWithCompactionOwnership appends through addItems, so a subclass that overrides addItems sees the runner’s appends', async () => {
    const { id } = await seeded([user('task')]);
    const seen: AgentInputItem[][] = [];
    const session = new (class extends LineageSession {
      override async addItems(items: AgentInputItem[]): Promise<void> {
        seen.push(items);
        await super.addItems(items);
      }
    })({ client: other, sessionId: id });
    const { ownership } = await session.getItemsWithCompactionOwnership();
    await session.addItemsWithCompactionOwnership([message('ours')], ownership);
    expect(seen).toEqual([[message('ours')]]);
    expect((await other.readConversation(id)).items).toEqual([user('task'), message('ours')]);
  });

  test('X2: a null or foreign receipt compacts nothing; undefined is a manual compaction as before', async () => {
    const { calls, engine } = engineCounting();
    const { id } = await seeded([user('task'), message('a'), message('b')]);
    const session = new LineageSession({ client: other, sessionId: id, compaction: { engine } });
    await session.getItems();
    expect(await session.runCompaction({ force: true }, undefined, null)).toBeNull();
    expect(await session.runCompaction({ force: true }, undefined, {})).toBeNull();
    expect(calls).toEqual([]);
    expect(await session.runCompaction({ force: true })).toBeNull();
    expect(calls).toEqual([3]);
  });
});
