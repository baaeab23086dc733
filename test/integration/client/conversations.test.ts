// The client's conversation methods over real HTTP (serverless-offline): one id for the whole
// chain, appends that follow rotations without a 409, typed errors (SPEC K1-K3).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BadRequestError, ConflictError, LineageClient, NotFoundError, type HistoryPage, type Item } from '../../../lib/client/index.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';

let service: LocalService;
let client: LineageClient;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  client = new LineageClient({ baseUrl: service.baseUrl, apiKey: await service.createApiKey(`c-${randomUUID().slice(0, 8)}`) });
}, 240_000);
afterAll(async () => {
  await service?.stop();
});

const say = (i: number): Item[] => [
  { role: 'user', content: `question ${i}: ${'how should this be configured? '.repeat(10)}` },
  { role: 'assistant', content: `answer ${i}: ${'set it like this. '.repeat(20)}` },
];

describe('LineageClient conversations', () => {
  it('K1/K2: put, append across a rotation on the same id, read, lineage, compress; the append names where it landed', async () => {
    const id = `user_${randomUUID().slice(0, 8)}`;
    const put = await client.putConversation(id, { metadata: { plan: 'pro' } });
    expect(put.created).toBe(true);
    expect((await client.putConversation(id)).created).toBe(false);
    for (let i = 0; i < 3; i++) await client.appendToConversation(id, say(i));
    const compressed = await client.compressConversation(id, { mode: 'rotate', keepLast: 2 });
    expect(compressed.outcome).toBe('compressed');
    const after = await client.appendToConversation(id, say(9));
    expect(after.sessionId).toBe(compressed.sessionId);
    expect(after.session.conversationId).toBe(id);
    const { items, session } = await client.readConversation(id);
    expect(session.sessionId).toBe(compressed.sessionId);
    expect(items.slice(-2)).toEqual(say(9));
    const lineage = await client.conversationLineage(id);
    expect(lineage.tip).toBe(compressed.sessionId);
    expect(lineage.chain[0]!.sessionId).toBe(put.conversation.rootSessionId);
    const conversation = await client.getConversation(id);
    expect(conversation).toMatchObject({ liveSessionId: compressed.sessionId, sessions: 2, metadata: { plan: 'pro' } });
    expect((await client.updateConversation(id, { plan: 'team' })).metadata).toEqual({ plan: 'team' });
    const popped = await client.popConversation(id);
    expect(popped.removed).toEqual(say(9)[1]);
    const listed = await client.listConversations({ limit: 5 });
    expect(listed.conversations.map((c) => c.conversationId)).toContain(id);
  });

  it('K3: delete, then 404; bad ids and format mismatches are typed errors', async () => {
    const id = `gone.${randomUUID().slice(0, 8)}`;
    await client.putConversation(id, { format: 'responses' });
    await expect(client.putConversation(id, { format: 'chat' })).rejects.toBeInstanceOf(ConflictError);
    await client.deleteConversation(id);
    await expect(client.getConversation(id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.appendToConversation(id, say(1))).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.getConversation('no spaces allowed')).rejects.toBeInstanceOf(BadRequestError);
  });

  it('H2: branch(id, {conversationId, fromSeq}) makes a new conversation with the edge; a retry with its key makes one; typed errors', async () => {
    const id = `src.${randomUUID().slice(0, 8)}`;
    await client.putConversation(id);
    for (let i = 0; i < 3; i++) await client.appendToConversation(id, say(i));
    const newId = `${id}.b`;
    const b = await client.branch(id, { conversationId: newId, fromSeq: 3 }, { idempotencyKey: `k-${newId}` });
    expect(b).toMatchObject({ conversationId: newId, messageCount: 3, branchedFrom: { conversationId: id, seq: 3 } });
    expect(await client.branch(id, { conversationId: newId, fromSeq: 3 }, { idempotencyKey: `k-${newId}` })).toEqual(b);
    expect((await client.readConversation(newId)).items).toEqual([...say(0), say(1)[0]]);
    expect((await client.conversationLineage(newId)).branchedFrom).toEqual(b.branchedFrom);
    await expect(client.branch(id, { conversationId: newId })).rejects.toMatchObject({ status: 409, code: 'conversation_exists' });
    const far = await client.branch(id, { conversationId: `${id}.c`, fromSeq: 99 }).catch((e: unknown) => e);
    expect(far).toBeInstanceOf(BadRequestError);
    expect(far).toMatchObject({ code: 'from_seq_out_of_range', field: 'fromSeq' });
  });
  it('H1/H5: history and sessionHistory page the originals after a compaction; exportConversation pages to the end and importConversation restores it (one import per key)', async () => {
    const id = `hist.${randomUUID().slice(0, 8)}`;
    await client.putConversation(id);
    for (let i = 0; i < 6; i++) await client.appendToConversation(id, say(i));
    expect((await client.compressConversation(id, { mode: 'rotate', keepLast: 2 })).outcome).toBe('compressed');
    await client.appendToConversation(id, say(9));
    const all = async (page: (q: { limit: number; cursor?: string }) => Promise<HistoryPage>) => {
      const out: HistoryPage['entries'] = [];
      for (let cursor: string | undefined; ;) {
        const p = await page({ limit: 5, ...(cursor ? { cursor } : {}) });
        out.push(...p.entries);
        if (!p.nextCursor) return out;
        cursor = p.nextCursor;
      }
    };
    const entries = await all((q) => client.history(id, q));
    // Every original item of the rotated parent, then the child's summary (flagged) and what came after.
    expect(entries.slice(0, 12).map((e) => e.item)).toEqual([0, 1, 2, 3, 4, 5].flatMap(say));
    expect(entries.some((e) => e.summary === true)).toBe(true);
    expect(entries.slice(-2).map((e) => e.item)).toEqual(say(9));
    const tip = (await client.getConversation(id)).liveSessionId;
    expect(await all((q) => client.sessionHistory(tip, q))).toEqual(entries);

    const ndjson = await client.exportConversation(id, { limit: 4 });
    const lines = ndjson
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; item?: unknown });
    expect(lines[0]!.type).toBe('conversation');
    expect(lines.slice(1).map((l) => l.item)).toEqual(entries.map((e) => e.item));
    const copy = `${id}.copy`;
    const imported = await client.importConversation(copy, ndjson, { idempotencyKey: `k-${copy}` });
    expect(await client.importConversation(copy, ndjson, { idempotencyKey: `k-${copy}` })).toEqual(imported);
    expect(imported).toMatchObject({ conversationId: copy, sessions: 2, items: entries.length });
    expect((await client.readConversation(copy)).items).toEqual((await client.readConversation(id)).items);
    await expect(client.importConversation(copy, ndjson)).rejects.toMatchObject({ status: 409 });
  });
});
