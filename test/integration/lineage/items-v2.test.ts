// The store side of API v2 on DynamoDB Local: idempotent appends and creates (A3), conditional
// appends (A4), paging and tail reads (A5), pop and delete (A6), concurrent appends (I4).
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CountMismatchError,
  IdempotencyKeyReusedError,
  SessionNotFoundError,
  CursorStaleError,
  StaleSnapshotError,
  type AppendResult,
  type PagePosition,
} from '../../../lib/lineage/index.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { Item } from '../../../lib/items/types.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { append, begin, commitInput, dynamoClient, makeStore, msg, msgs, newSession, rawItems } from './support.js';

const client = dynamoClient();
const store = makeStore(client);
afterAll(() => client.destroy());

const key = (requestHash = 'h1') => ({ key: `k-${randomUUID()}`, requestHash });
const respond = (s: { messageCount: number }, appended: number) => ({ status: 200, body: { count: s.messageCount, appended } });

async function pageAll(ref: SessionRef, limit: number): Promise<Item[]> {
  const out: Item[] = [];
  let from: PagePosition | undefined;
  do {
    const page = await store.readPage(ref, { limit, maxBytes: 4_500_000, ...(from ? { from } : {}) });
    out.push(...page.items);
    from = page.next ?? undefined;
  } while (from);
  return out;
}

describe('idempotent appends (A3)', () => {
  it('A3: a retry with the same key and body replays the first response and writes nothing', async () => {
    const ref = await newSession(store, []);
    const idem = key();
    const first = await store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency: idem, respond });
    expect(first).toMatchObject({ replayed: false, response: { status: 200, body: { count: 1, appended: 1 } } });
    const again = await store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency: idem, respond });
    expect(again).toEqual({ replayed: true, response: { status: 200, body: { count: 1, appended: 1 } } });
    expect(await store.readAll(ref)).toEqual([msg(1)]);
  });

  it('A3/I2: a retry whose key read beat its first try, and whose session read saw the rotation after it, replays (never 409)', async () => {
    // The first try is still in flight when the client retries: the retry reads "no such key",
    // then the first try lands, then a rotation ends the session, then the retry reads "ended".
    // A 409 here would send the client to append the same items again on the child.
    const ref = await newSession(store, msgs(1, 4));
    const idem = key();
    const retryClient = dynamoClient();
    let release!: () => void;
    const raced = new Promise<void>((r) => (release = r));
    let armed = true;
    retryClient.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { Key?: { sk?: unknown } };
        const sk = typeof input.Key?.sk === 'string' ? input.Key.sk : '';
        if (!armed || !sk) return next(args);
        if (sk.startsWith('IDEM#')) {
          const out = await next(args); // "no such key": the first try has not landed yet
          await store.appendItems(ref, { prepare: asIs([msg(5)]), idempotency: idem, respond });
          await store.commitRotation(ref, await begin(store, ref), commitInput([msg(1)]));
          release();
          return out;
        }
        if (sk === 'META') {
          await raced;
          armed = false;
        }
        return next(args);
      },
      { step: 'initialize', name: 'retryRacesFirstTry' },
    );
    try {
      const again = await makeStore(retryClient).appendItems(ref, { prepare: asIs([msg(5)]), idempotency: idem, respond });
      expect(again).toEqual({ replayed: true, response: { status: 200, body: { count: 5, appended: 1 } } });
    } finally {
      retryClient.destroy();
    }
  });

  it('A3: 20 identical requests racing land once; every one answers the same response', async () => {
    const ref = await newSession(store, []);
    const idem = key();
    const others = Array.from({ length: 4 }, () => makeStore(dynamoClient()));
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => others[i % 4]!.appendItems(ref, { prepare: asIs(msgs(1, 3)), idempotency: idem, respond })),
    );
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    const bodies = results.map((r) => (r.replayed ? r.response.body : r.response?.body));
    for (const b of bodies) expect(b).toEqual({ count: 3, appended: 3 });
    expect(await store.readAll(ref)).toEqual(msgs(1, 3));
  });

  it('A3: the same key with a different body is refused (IdempotencyKeyReusedError), nothing written', async () => {
    const ref = await newSession(store, []);
    const k = `k-${randomUUID()}`;
    await store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency: { key: k, requestHash: 'a' }, respond });
    await expect(
      store.appendItems(ref, { prepare: asIs([msg(2)]), idempotency: { key: k, requestHash: 'b' }, respond }),
    ).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    expect(await store.readAll(ref)).toEqual([msg(1)]);
  });

  it('A3: keys are scoped to the session: the same key on another session is a new request', async () => {
    const a = await newSession(store, []);
    const b = await newSession(store, []);
    const idem = key();
    await store.appendItems(a, { prepare: asIs([msg(1)]), idempotency: idem, respond });
    const r = await store.appendItems(b, { prepare: asIs([msg(1)]), idempotency: idem, respond });
    expect(r.replayed).toBe(false);
  });

  it('A3: a replay still answers the first response after the session was rotated', async () => {
    const ref = await newSession(store, []);
    const idem = key();
    await store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency: idem, respond });
    await store.commitRotation(ref, await begin(store, ref), commitInput([msg(1)]));
    expect(await store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency: idem, respond })).toMatchObject({ replayed: true });
  });

  it('A3: a retried create with the same key makes one session and returns it', async () => {
    const tenantId = `t-${randomUUID()}`;
    const idem = key();
    const mk = () => store.createSession({ tenantId, idempotency: idem, respond: (s) => ({ status: 201, body: { id: s.sessionId } }) });
    const [a, b, c] = await Promise.all([mk(), mk(), mk()]);
    const made = [a, b, c].filter((r) => !r.replayed);
    expect(made).toHaveLength(1);
    const id = made[0]!.replayed ? '' : made[0]!.session.sessionId;
    for (const r of [a, b, c]) if (r.replayed) expect(r.response).toEqual({ status: 201, body: { id } });
  });
});

describe('conditional appends (A4)', () => {
  it('A4: expectedCount lands only at that position; a mismatch names the current count', async () => {
    const ref = await newSession(store, msgs(1, 2));
    await store.appendItems(ref, { prepare: asIs([msg(3)]), expectedCount: 2 });
    const err = await store.appendItems(ref, { prepare: asIs([msg(4)]), expectedCount: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CountMismatchError);
    expect((err as CountMismatchError).messageCount).toBe(3);
    expect(await store.readAll(ref)).toEqual(msgs(1, 3));
  });

  it('A4: two racing appends with the same expectedCount: exactly one lands', async () => {
    const ref = await newSession(store, []);
    const other = makeStore(dynamoClient());
    const results = await Promise.allSettled([
      store.appendItems(ref, { prepare: asIs([msg(1)]), expectedCount: 0 }),
      other.appendItems(ref, { prepare: asIs([msg(2)]), expectedCount: 0 }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(CountMismatchError);
    expect(await store.readAll(ref)).toHaveLength(1);
  });
});

describe('concurrent appends (I4)', () => {
  it('I4: 20 concurrent appends from 5 processes all land, each once, none sharing a position', async () => {
    const ref = await newSession(store, []);
    const writers = Array.from({ length: 5 }, () => makeStore(dynamoClient()));
    const results: AppendResult[] = await Promise.all(
      Array.from({ length: 20 }, (_, i) => writers[i % 5]!.appendItems(ref, { prepare: asIs([{ role: 'user', content: `w${i}` }]) })),
    );
    expect(results.every((r) => !r.replayed)).toBe(true);
    const items = await store.readAll(ref);
    expect(items).toHaveLength(20);
    expect(new Set(items.map((m) => m.content)).size).toBe(20);
    const session = await store.getSession(ref);
    expect(session).toMatchObject({ messageCount: 20, lastSeq: 20 });
    expect((await rawItems(client, ref)).filter((i) => String(i.sk).startsWith('MSG#'))).toHaveLength(20);
  });
});

describe('paging (A5)', () => {
  it('A5: pages of 7 return every item once, in order; the last page has no next', async () => {
    const ref = await newSession(store, msgs(1, 30));
    expect(await pageAll(ref, 7)).toEqual(msgs(1, 30));
    const last = await store.readPage(ref, { limit: 100, maxBytes: 4_500_000 });
    expect(last.next).toBeNull();
    const exact = await store.readPage(ref, { limit: 30, maxBytes: 4_500_000 });
    expect(exact.items).toHaveLength(30);
    expect(exact.next).toBeNull();
  });

  it('A5: a page is cut by bytes (never below one item) and paging still returns everything', async () => {
    const big = Array.from({ length: 12 }, (_, i): Item => ({ role: 'user', content: `${i}` + 'z'.repeat(100_000) }));
    const ref = await newSession(store, big);
    const first = await store.readPage(ref, { limit: 1000, maxBytes: 350_000 });
    expect(first.items).toHaveLength(3);
    expect(first.next).not.toBeNull();
    const tiny = await store.readPage(ref, { limit: 1000, maxBytes: 10 });
    expect(tiny.items).toHaveLength(1);
    let all: Item[] = [];
    let from: PagePosition | undefined;
    do {
      const p = await store.readPage(ref, { limit: 1000, maxBytes: 350_000, ...(from ? { from } : {}) });
      all = [...all, ...p.items];
      from = p.next ?? undefined;
    } while (from);
    expect(all).toEqual(big);
  });

  it('A5: paging 600 items while appends land returns every item once, in order', async () => {
    const ref = await newSession(store, msgs(1, 300));
    const writer = makeStore(dynamoClient());
    const appending = (async () => {
      for (let i = 301; i <= 600; i += 30) await append(writer, ref, msgs(i, i + 29));
    })();
    const seen: Item[] = [];
    let from: PagePosition | undefined;
    let done = false;
    void appending.then(() => (done = true));
    // Page to the end as it stands; while appends are still landing, carry on from the last item read.
    for (let more = true; more;) {
      // Read before the page: a page read after the last append finished sees every item.
      const finished = done;
      const p = await store.readPage(ref, { limit: 25, maxBytes: 4_500_000, ...(from ? { from } : {}) });
      seen.push(...p.items);
      from = p.next ?? { generation: 0, afterSeq: seen.length };
      more = p.next !== null || !finished;
    }
    expect(seen).toEqual(msgs(1, 600));
  });

  it('A5: a cursor into a generation an in-place compaction replaced is CursorStaleError', async () => {
    const ref = await newSession(store, msgs(1, 10));
    const page = await store.readPage(ref, { limit: 3, maxBytes: 4_500_000 });
    await store.commitInPlace(ref, await begin(store, ref), commitInput([msg(10)]));
    await expect(store.readPage(ref, { limit: 3, maxBytes: 4_500_000, from: page.next! })).rejects.toBeInstanceOf(CursorStaleError);
  });

  it('A5: tail returns the latest N in chronological order, cut by bytes from the oldest end', async () => {
    const ref = await newSession(store, msgs(1, 20));
    expect(await store.readTail(ref, 5, 4_500_000)).toMatchObject({ items: msgs(16, 20), truncated: false });
    expect(await store.readTail(ref, 50, 4_500_000)).toMatchObject({ items: msgs(1, 20), truncated: false });
    expect(await store.readTail(ref, 20, 4_500_000)).toMatchObject({ items: msgs(1, 20), truncated: false });
    const two = JSON.stringify(msg(19)).length + JSON.stringify(msg(20)).length;
    // Cut by the size bound: fewer than asked, and it says so (the client pages for the rest).
    expect(await store.readTail(ref, 5, two)).toMatchObject({ items: msgs(19, 20), truncated: true });
    expect(await store.readTail(ref, 2, two)).toMatchObject({ items: msgs(19, 20), truncated: false });
  });
});

describe('pop (A6)', () => {
  it('A6: pop removes the last item and returns it; popping an empty session returns null', async () => {
    const ref = await newSession(store, msgs(1, 2));
    const first = await store.popLast(ref);
    expect(first.removed).toEqual(msg(2));
    expect(first.session.messageCount).toBe(1);
    expect((await store.popLast(ref)).removed).toEqual(msg(1));
    expect(await store.popLast(ref)).toMatchObject({ removed: null, session: { messageCount: 0 } });
    // Positions are never reused: the next append goes after the popped ones.
    await append(store, ref, [msg(3)]);
    expect(await store.readAll(ref)).toEqual([msg(3)]);
    expect((await store.getSession(ref))?.lastSeq).toBe(3);
  });

  it('A6: popping an item an in-flight attempt snapshotted makes its commit fail as stale; nothing is written', async () => {
    const ref = await newSession(store, msgs(1, 5));
    const begun = await begin(store, ref);
    await store.popLast(ref);
    await expect(store.commitRotation(ref, begun, commitInput([{ role: 'assistant', content: 'summary of 1-5' }]))).rejects.toBeInstanceOf(
      StaleSnapshotError,
    );
    expect(await store.children(ref)).toEqual([]);
    expect(await store.readAll(ref)).toEqual(msgs(1, 4));
  });

  it('A6: popping an item of the concurrent tail does not stop the commit, and the popped item is not carried', async () => {
    const ref = await newSession(store, msgs(1, 5));
    const begun = await begin(store, ref);
    await append(store, ref, msgs(6, 7));
    await store.popLast(ref);
    const out = await store.commitInPlace(ref, begun, commitInput([msg(5)]));
    expect(out.items).toEqual([msg(5), msg(6)]);
  });

  it('A6: 10 concurrent pops remove 10 different items', async () => {
    const ref = await newSession(store, msgs(1, 12));
    const poppers = Array.from({ length: 5 }, () => makeStore(dynamoClient()));
    const removed = await Promise.all(Array.from({ length: 10 }, (_, i) => poppers[i % 5]!.popLast(ref)));
    expect(new Set(removed.map((r) => r.removed?.content)).size).toBe(10);
    expect(await store.readAll(ref)).toEqual(msgs(1, 2));
  });
});

describe('delete (A6)', () => {
  it('A6: a deleted session answers not found everywhere; its items are purged; relatives keep their links', async () => {
    const ref = await newSession(store, msgs(1, 4));
    const out = await store.commitRotation(ref, await begin(store, ref), commitInput([msg(4)]));
    const child = { tenantId: ref.tenantId, sessionId: out.child.sessionId };
    await store.deleteSession(ref);
    expect(await store.getSession(ref)).toBeNull();
    await expect(store.readAll(ref)).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(append(store, ref, [msg(9)])).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(store.popLast(ref)).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(store.lineage(ref)).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(store.deleteSession(ref)).rejects.toBeInstanceOf(SessionNotFoundError);
    // The child still names its parent, and its lineage shows the parent as deleted.
    const chain = await store.lineage(child);
    expect(chain.map((s) => [s.sessionId, s.deletedAt !== undefined])).toEqual([
      [ref.sessionId, true],
      [child.sessionId, false],
    ]);
    expect((await store.getSession(child))?.parentSessionId).toBe(ref.sessionId);
    // Items are purged (the store runs the purge in the background; the sweep would otherwise).
    await expect.poll(async () => (await rawItems(client, ref)).filter((i) => i.sk !== 'META'), { timeout: 10_000 }).toEqual([]);
  });

  it('A6: deleting a session mid-compaction makes the commit fail and leaves no child', async () => {
    const ref = await newSession(store, msgs(1, 4));
    const begun = await begin(store, ref);
    await store.deleteSession(ref);
    await expect(store.commitRotation(ref, begun, commitInput([msg(4)]))).rejects.toBeInstanceOf(SessionNotFoundError);
    expect(await store.children(ref)).toEqual([]);
  });
});
