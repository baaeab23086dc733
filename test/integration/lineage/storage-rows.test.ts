// The storage layout (SPEC A7, A5, A6, C10, C11, S2; lib/lineage/README.md "Storage layout"):
// packed rows, items spanning parts, appends beyond one transaction, and sessions written in the
// one-row-per-item layout of before, all on DynamoDB Local.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import type { Item } from '../../../lib/items/types.js';
import { metaKey, messageSk, sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import { ItemTooLargeError, SessionEndedError, StoreOutcomeUnknownError } from '../../../lib/lineage/errors.js';
import { MAX_ITEM_BYTES } from '../../../lib/lineage/limits.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { begin, commitInput, doc, dynamoClient, makeStore, msg, msgs, newSession, tableName } from './support.js';

const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));
function client(): DynamoDBClient {
  const c = dynamoClient();
  clients.push(c);
  return c;
}

const store = makeStore();
/** An item of exactly `bytes` bytes of JSON. */
function sized(bytes: number, role: 'user' | 'assistant' = 'user', tag = ''): Item {
  const frame = Buffer.byteLength(JSON.stringify({ role, content: tag }), 'utf8');
  return { role, content: tag + 'x'.repeat(bytes - frame) };
}
/** A computer-use screenshot output of about `kb` KB (a base64 data URL). */
function screenshot(kb: number, n = 0): Item {
  return {
    type: 'computer_call_output',
    call_id: `call_${n}`,
    output: { type: 'computer_screenshot', image_url: `data:image/png;base64,${'iVBORw0KGgo'.repeat(Math.ceil((kb * 1024) / 11))}` },
  };
}
/** Every stored row under the session with this sort-key prefix (paged: chunks pass 1 MB). */
async function rows(ref: SessionRef, prefix: string): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await doc(client()).send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
        ExpressionAttributeValues: { ':pk': sessionPk(ref), ':p': prefix },
        ProjectionExpression: 'pk, sk, w, expiresAt',
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    found.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return found;
}

function beforeTransaction(c: DynamoDBClient, action: () => Promise<unknown>): void {
  let done = false;
  c.middlewareStack.add(
    (next, context) => async (args) => {
      if (!done && context.commandName === 'TransactWriteItemsCommand') {
        done = true;
        await action();
      }
      return next(args);
    },
    { step: 'initialize', name: 'beforeTransaction' },
  );
}

describe('packed rows (A7)', () => {
  it('A7: ten small items are one row; a 600 KB screenshot spans a head and parts; both read back deep-equal', async () => {
    const small = msgs(1, 10);
    const shot = screenshot(600, 1);
    const ref = await newSession(store, small);
    await store.appendItems(ref, { prepare: asIs([shot]) });
    expect((await rows(ref, 'MSG#')).map((r) => r.sk)).toEqual([messageSk(0, 10), messageSk(0, 11), `${messageSk(0, 11)}#0001`]);
    expect(await store.readAll(ref)).toEqual([...small, shot]);
    expect((await store.readTail(ref, 3, 4_500_000)).items).toEqual([small[8], small[9], shot]);
  });

  it(
    'A7: a 4,000,000-byte item round-trips deep-equal; 4,000,001 bytes is ItemTooLargeError naming it, nothing written',
    { timeout: 120_000 },
    async () => {
      const ref = await newSession(store, []);
      const big = sized(MAX_ITEM_BYTES, 'user', 'é');
      await store.appendItems(ref, { prepare: asIs([msg(1), big]) });
      expect(await store.readAll(ref)).toEqual([msg(1), big]);
      const page = await store.readPage(ref, { limit: 10, maxBytes: 4_500_000 });
      expect(page.items).toHaveLength(2);
      // A5: a page stays under the response bound; the 4 MB item comes back alone.
      const first = await store.readPage(ref, { limit: 10, maxBytes: 1_000 });
      expect(first.items).toEqual([msg(1)]);
      const second = await store.readPage(ref, { limit: 10, maxBytes: 1_000, from: first.next! });
      expect(second.items).toEqual([big]);
      expect(second.next).toBeNull();

      const err = await store.appendItems(ref, { prepare: asIs([msg(3), sized(MAX_ITEM_BYTES + 1)]) }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ItemTooLargeError);
      expect(err).toMatchObject({ index: 1, bytes: MAX_ITEM_BYTES + 1, limit: MAX_ITEM_BYTES });
      expect((await store.getSession(ref))?.messageCount).toBe(2);
    },
  );

  it('A7: an append beyond one transaction (1,200 items, 480 KB over 200 KB transactions) lands whole, in order, its chunk task gone', async () => {
    // Transactions of 200 KB: the same path a 5 MB body takes (over HTTP in test/e2e/http/storage-sizes.test.ts).
    const store = makeStore(client(), { transactionBytes: 200_000 });
    const ref = await newSession(store, [msg(0)]);
    const items = Array.from({ length: 1200 }, (_, i) => sized(400, i % 2 ? 'assistant' : 'user', `${i}:`));
    const out = await store.appendItems(ref, { prepare: asIs(items) });
    expect(out).toMatchObject({ appended: 1200 });
    expect(await store.readAll(ref)).toEqual([msg(0), ...items]);
    expect((await rows(ref, 'PART#')).length).toBeGreaterThan(0);
    expect(await rows(ref, 'TASK#')).toEqual([]);
    // Paging in small pages returns each item once, in order.
    const seen: Item[] = [];
    let from;
    do {
      const page = await store.readPage(ref, { limit: 97, maxBytes: 4_500_000, ...(from ? { from } : {}) });
      seen.push(...page.items);
      from = page.next;
    } while (from);
    expect(seen).toEqual([msg(0), ...items]);
    expect((await store.readTail(ref, 20, 4_500_000)).items).toEqual(items.slice(-20));
  });

  it('A7/I4: a 1,000-item append lands contiguously while another writer appends one item at a time', async () => {
    const ref = await newSession(store, []);
    const bulk = Array.from({ length: 1000 }, (_, i): Item => ({ role: 'user', content: `bulk ${i}` }));
    const racer = makeStore(client());
    let racing = true;
    const singles = (async () => {
      let n = 0;
      while (racing) await racer.appendItems(ref, { prepare: asIs([{ role: 'assistant', content: `single ${n++}` }]) });
      return n;
    })();
    await new Promise((r) => setTimeout(r, 30));
    await store.appendItems(ref, { prepare: asIs(bulk) });
    await new Promise((r) => setTimeout(r, 30));
    racing = false;
    const n = await singles;
    const all = await store.readAll(ref);
    expect(all).toHaveLength(1000 + n);
    const start = all.findIndex((it) => it.content === 'bulk 0');
    expect(all.slice(start, start + 1000)).toEqual(bulk);
    expect(all.filter((it) => typeof it.content === 'string' && it.content.startsWith('single')).map((it) => it.content)).toEqual(
      Array.from({ length: n }, (_, i) => `single ${i}`),
    );
  });
});

describe('chunks written ahead of a commit (A7 beyond one transaction, S2)', () => {
  const bulk = () => Array.from({ length: 12 }, (_, i) => sized(400_000, 'user', `${i}:`));

  it('A7/S2: a commit refused after the chunks were written removes them and their task; nothing is visible', async () => {
    const c = client();
    const writer = makeStore(c);
    const ref = await newSession(store, msgs(1, 2));
    beforeTransaction(c, async () => {
      const b = await begin(store, ref);
      await store.commitRotation(ref, b, commitInput([msg(9)]));
    });
    await expect(writer.appendItems(ref, { prepare: asIs(bulk()) })).rejects.toBeInstanceOf(SessionEndedError);
    expect(await rows(ref, 'PART#')).toEqual([]);
    expect(await rows(ref, 'TASK#parts')).toEqual([]);
    expect(await store.readAll(ref)).toEqual(msgs(1, 2));
  });

  it('A7/S2: chunks of an append whose commit was never confirmed are removed by the sweep once due, never while referenced', async () => {
    const c = client();
    c.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'TransactWriteItemsCommand') throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
        return next(args);
      },
      { step: 'initialize', name: 'lostTransaction' },
    );
    const writer = makeStore(c, { retry: { baseDelayMs: 1, maxDelayMs: 2 } });
    const ref = await newSession(store, msgs(1, 2));
    await expect(writer.appendItems(ref, { prepare: asIs(bulk()) })).rejects.toBeInstanceOf(StoreOutcomeUnknownError);
    expect((await rows(ref, 'PART#')).length).toBeGreaterThan(0);
    // Not due yet: the sweep leaves them.
    const early = await store.listSweepWork(Date.now(), 1000);
    expect(early.tasks.filter((t) => t.ref.sessionId === ref.sessionId)).toEqual([]);
    const due = (await store.listSweepWork(Date.now() + 31 * 60_000, 1000)).tasks.filter((t) => t.ref.sessionId === ref.sessionId);
    expect(due).toMatchObject([{ kind: 'parts' }]);
    await store.runTask(due[0]!);
    expect(await rows(ref, 'PART#')).toEqual([]);
    expect(await rows(ref, 'TASK#')).toEqual([]);

    // A landed append's chunks are never removed: its commit took the task away, so neither the
    // sweep nor a stale listing of its task removes them.
    await store.appendItems(ref, { prepare: asIs(bulk()) });
    const landed = (await rows(ref, 'MSG#')).find((r) => r.w !== undefined)!.w as string;
    const later = (await store.listSweepWork(Date.now() + 31 * 60_000, 1000)).tasks.filter((t) => t.ref.sessionId === ref.sessionId);
    expect(later).toEqual([]);
    expect(await store.runTask({ ...due[0]!, scope: landed })).toBe(0);
    expect(await store.readAll(ref)).toEqual([...msgs(1, 2), ...bulk()]);
  });
});

describe('pops on packed rows (A6)', () => {
  it('A6: pops take items off a packed row, a row with parts, and a row written beyond one transaction', async () => {
    const ref = await newSession(store, msgs(1, 3));
    const shot = screenshot(500, 2);
    await store.appendItems(ref, { prepare: asIs([shot]) });
    const big = Array.from({ length: 12 }, (_, i) => sized(400_000, 'user', `${i}:`));
    await store.appendItems(ref, { prepare: asIs(big) });
    for (const expected of [...big].reverse()) expect((await store.popLast(ref)).removed).toEqual(expected);
    expect((await store.popLast(ref)).removed).toEqual(shot);
    expect((await store.popLast(ref)).removed).toEqual(msg(3));
    expect(await store.readAll(ref)).toEqual(msgs(1, 2));
    await store.appendItems(ref, { prepare: asIs([msg(4)]) });
    expect(await store.readAll(ref)).toEqual([...msgs(1, 2), msg(4)]);
    // The popped rows' chunks go through the sweep's tasks, due once no reader can still be reading them.
    const tasks = (await store.listSweepWork(Date.now() + 31 * 60_000, 1000)).tasks.filter((t) => t.ref.sessionId === ref.sessionId);
    for (const t of tasks) await store.runTask(t);
    expect(await rows(ref, 'PART#')).toEqual([]);
    expect((await rows(ref, 'MSG#')).filter((r) => String(r.sk).split('#').length > 3)).toEqual([]);
  });

  it('A6: a pop of a snapshotted item inside a packed row makes the compaction stale', async () => {
    const ref = await newSession(store, msgs(1, 5));
    const b = await begin(store, ref);
    expect((await store.popLast(ref)).removed).toEqual(msg(5));
    await expect(store.commitInPlace(ref, b, commitInput([msg(9)]))).rejects.toThrow(/removed/);
    expect(await store.readAll(ref)).toEqual(msgs(1, 4));
  });
});

describe('sessions written one row per item, before packing (A7 existing data)', () => {
  /** A session as the old layout left it: a META and one `MSG#<gen>#<seq>` row with `body` per item. */
  async function legacySession(items: Item[]): Promise<SessionRef> {
    const ref = { tenantId: `t-${randomUUID()}`, sessionId: randomUUID() };
    const d = doc(client());
    await d.send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...metaKey(ref),
          ...ref,
          format: 'chat',
          createdAt: new Date().toISOString(),
          generation: 0,
          fenceCounter: 0,
          messageCount: 0,
          lastSeq: 0,
          tokenEstimate: 0,
          version: 1,
        },
      }),
    );
    for (const [i, it] of items.entries()) {
      await d.send(
        new PutCommand({
          TableName: tableName(),
          Item: { pk: sessionPk(ref), sk: messageSk(0, i + 1), generation: 0, seq: i + 1, body: JSON.stringify(it), tokens: 3 },
        }),
      );
    }
    await d.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: metaKey(ref),
        UpdateExpression: 'SET lastSeq = :n, messageCount = :n, tokenEstimate = :t',
        ExpressionAttributeValues: { ':n': items.length, ':t': items.length * 3 },
      }),
    );
    return ref;
  }

  it('A7: old rows read (all, pages with a cursor, tail), take appends after them, and pop', async () => {
    const ref = await legacySession(msgs(1, 5));
    expect(await store.readAll(ref)).toEqual(msgs(1, 5));
    await store.appendItems(ref, { prepare: asIs(msgs(6, 8)) });
    const p1 = await store.readPage(ref, { limit: 4, maxBytes: 4_500_000 });
    const p2 = await store.readPage(ref, { limit: 4, maxBytes: 4_500_000, from: p1.next! });
    expect([...p1.items, ...p2.items]).toEqual(msgs(1, 8));
    expect((await store.readTail(ref, 4, 4_500_000)).items).toEqual(msgs(5, 8));
    for (const i of [8, 7, 6, 5]) expect((await store.popLast(ref)).removed).toEqual(msg(i));
    expect(await store.readAll(ref)).toEqual(msgs(1, 4));
    expect((await store.getSession(ref))?.tokenEstimate).toBe(4 * 3);
  });

  it('C10/C11/I4: old rows compact by rotation and in place, carrying a tail appended in the new layout; the archive covers them', async () => {
    const rotated = await legacySession(msgs(1, 6));
    const b = await begin(store, rotated);
    await store.appendItems(rotated, { prepare: asIs([msg(7)]) });
    const out = await store.commitRotation(rotated, b, commitInput([msg(100)]));
    expect(await store.readAll({ tenantId: rotated.tenantId, sessionId: out.child.sessionId })).toEqual([msg(100), msg(7)]);

    const inPlace = await legacySession(msgs(1, 6));
    const c = await begin(store, inPlace);
    await store.appendItems(inPlace, { prepare: asIs([msg(7)]) });
    const flipped = await store.commitInPlace(inPlace, c, commitInput([msg(100)]));
    expect(await store.readAll(inPlace)).toEqual([msg(100), msg(7)]);
    expect(await store.runTask(flipped.archive)).toBe(7);
    const old = (await rows(inPlace, 'MSG#0000000000#')).filter((r) => r.expiresAt === undefined);
    expect(old).toEqual([]);
  });
});
