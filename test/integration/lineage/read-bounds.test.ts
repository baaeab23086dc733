// Issue 28: pages bounded in UTF-8 bytes, as responses carry them (A5, item 4), and a read that
// meets a pop of a row written ahead between its Query of the head and its read of the chunks
// (A6, A7: the suspected truncated body). Real DynamoDB Local; the race is forced with client
// middleware, no sleeps.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import type { Item } from '../../../lib/items/types.js';
import { MAX_PAGE_BYTES } from '../../../lib/lineage/limits.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { dynamoClient, makeStore, msgs, newSession, rawItems } from './support.js';

const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));
function client(): DynamoDBClient {
  const c = dynamoClient();
  clients.push(c);
  return c;
}
const store = makeStore();
const jsonBytes = (items: readonly Item[]) => items.reduce((n, it) => n + Buffer.byteLength(JSON.stringify(it), 'utf8'), 0);

describe('A5: pages are cut in UTF-8 bytes (issue 28 item 4)', { timeout: 120_000 }, () => {
  it('A5: two items of 1.2M CJK characters (3.6 MB each) come back one per page and one in the tail, never as one 7.2 MB page', async () => {
    const cjk = (tag: string): Item => ({ role: 'user', content: tag + '中'.repeat(1_200_000) });
    const [a, b] = [cjk('a'), cjk('b')];
    const ref = await newSession(store, []);
    await store.appendItems(ref, { prepare: asIs([a]) });
    await store.appendItems(ref, { prepare: asIs([b]) });
    const first = await store.readPage(ref, { limit: 100, maxBytes: MAX_PAGE_BYTES });
    expect(first.items).toEqual([a]);
    expect(jsonBytes(first.items)).toBeLessThanOrEqual(MAX_PAGE_BYTES);
    const second = await store.readPage(ref, { limit: 100, maxBytes: MAX_PAGE_BYTES, from: first.next! });
    expect(second.items).toEqual([b]);
    expect(second.next).toBeNull();
    const tail = await store.readTail(ref, 10, MAX_PAGE_BYTES);
    expect(tail.items).toEqual([b]);
    expect(tail.truncated).toBe(true);
  });
});

describe('A6/A7: a pop of a row written ahead, racing a read of its chunks (issue 28, suspected)', { timeout: 120_000 }, () => {
  /** An item of exactly `bytes` bytes of JSON. */
  function sized(bytes: number): Item {
    const frame = Buffer.byteLength(JSON.stringify({ role: 'user', content: '' }), 'utf8');
    return { role: 'user', content: 'x'.repeat(bytes - frame) };
  }
  async function partRows(ref: SessionRef) {
    return (await rawItems(client(), ref)).filter((r) => String(r.sk).startsWith('PART#'));
  }

  it("A6/A7: the pop and the sweep between a reader's Query of the head and its read of the chunks: the read answers the item whole; the chunks go once no reader can still need them", async () => {
    const big = sized(3_000);
    const ref = await newSession(store, msgs(1, 2));
    // A 2,000-byte transaction: this append writes its chunks ahead (PART#<w>#...).
    await makeStore(undefined, { transactionBytes: 2_000 }).appendItems(ref, { prepare: asIs([big]) });
    expect((await partRows(ref)).length).toBeGreaterThan(0);
    const c = client();
    let raced = false;
    c.middlewareStack.add(
      (next) => async (args) => {
        const prefix = (args.input as { ExpressionAttributeValues?: { ':prefix'?: unknown } }).ExpressionAttributeValues?.[':prefix'];
        if (!raced && typeof prefix === 'string' && prefix.startsWith('PART#')) {
          raced = true;
          expect((await store.popLast(ref)).removed).toEqual(big);
          // The sweep runs at once, as it may: nothing of this session is due yet.
          const due = (await store.listSweepWork(Date.now() + 1_000, 1000)).tasks.filter((t) => t.ref.sessionId === ref.sessionId);
          for (const t of due) await store.runTask(t);
        }
        return next(args);
      },
      { step: 'initialize', name: 'popBeforeChunks' },
    );
    expect(await makeStore(c).readAll(ref)).toEqual([...msgs(1, 2), big]);
    expect(raced).toBe(true);
    expect(await store.readAll(ref)).toEqual(msgs(1, 2));
    // Past the longest invocation the sweep removes the popped row's chunks.
    const later = (await store.listSweepWork(Date.now() + 31 * 60_000, 1000)).tasks.filter((t) => t.ref.sessionId === ref.sessionId);
    expect(later).toMatchObject([{ kind: 'parts' }]);
    for (const t of later) await store.runTask(t);
    expect(await partRows(ref)).toEqual([]);
  });
});
