// SPEC H1 with items stored in chunks (A7): inline parts, and parts written ahead of a big append.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { dynamoClient, makeStore } from '../lineage/support.js';

const ddb = dynamoClient();
const store = makeStore(ddb);
afterAll(() => ddb.destroy());
const msg = (role: string, content: string) => ({ role, content });

describe('history of big items (SPEC H1, A7)', () => {
  it('H1: items stored in chunks (inline parts, and parts written ahead of a big append) read back deep-equal, a page under the size bound', async () => {
    const id = `hist-big-${randomUUID().slice(0, 8)}`;
    const tenantId = `hist-big-${randomUUID().slice(0, 8)}`;
    const { conversation } = await store.ensureConversation({ tenantId, conversationId: id }, false);
    const root = { tenantId, sessionId: conversation.rootSessionId };
    const big = (n: number, bytes: number) => msg('user', `${n} `.padEnd(bytes, 'x'));
    const items = [big(1, 1_000_000), msg('assistant', 'small'), big(2, 2_200_000), big(3, 2_200_000), msg('user', 'tail')];
    await store.appendItems(root, { prepare: () => ({ items: items.slice(0, 2), tokenEstimates: [1, 1] }) });
    await store.appendItems(root, { prepare: () => ({ items: items.slice(2), tokenEstimates: [1, 1, 1] }) });
    const seen = [];
    let from;
    let pages = 0;
    for (;;) {
      const page = await store.readHistory(tenantId, id, { limit: 1000, maxBytes: 4_500_000, ...(from ? { from } : {}) });
      const bytes = page.entries.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e), 'utf8'), 0);
      expect(bytes).toBeLessThan(5_000_000);
      seen.push(...page.entries.map((e) => e.item));
      pages++;
      if (!page.next) break;
      from = page.next;
    }
    expect(seen).toEqual(items);
    expect(pages).toBeGreaterThan(1);
  });

  it('H1: an item whose inline parts pass a Query page (1 MB) is read whole: paging ends (it used to answer the same cursor for ever)', async () => {
    const id = `hist-big-${randomUUID().slice(0, 8)}`;
    const tenantId = `hist-big-${randomUUID().slice(0, 8)}`;
    const { conversation } = await store.ensureConversation({ tenantId, conversationId: id }, false);
    const root = { tenantId, sessionId: conversation.rootSessionId };
    const items = [msg('user', 'one'), msg('assistant', 'x'.repeat(1_500_000)), msg('user', 'three')];
    await store.appendItems(root, { prepare: () => ({ items: items.slice(0, 1), tokenEstimates: [1] }) });
    await store.appendItems(root, { prepare: () => ({ items: items.slice(1), tokenEstimates: [1, 1] }) });
    const seen = [];
    let from;
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(10);
      const page = await store.readHistory(tenantId, id, { limit: 1000, maxBytes: 4_500_000, ...(from ? { from } : {}) });
      seen.push(...page.entries.map((e) => e.item));
      if (!page.next) break;
      from = page.next;
    }
    expect(seen).toEqual(items);
  });
});
