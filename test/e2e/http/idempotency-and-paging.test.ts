// Idempotent and conditional appends, and paging, over real HTTP (SPEC A3, A4, A5).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Item } from '../../../lib/items/types.js';
import { singleRunText } from '../../fixtures/transcripts/index.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';
import { apiClient, type Api, type ApiResponse } from './api-client.js';
import { appendAll, createSession, readAll, readPages, turns } from './session-helpers.js';

let service: LocalService;
let api: Api;
let tenant: string;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  tenant = `idem-${randomUUID().slice(0, 8)}`;
  api = apiClient(service.baseUrl, await service.createApiKey(tenant));
});

afterAll(async () => {
  await service?.stop();
});

const replayed = (r: ApiResponse) => r.headers.get('idempotent-replayed') === 'true';
const numbered = (tag: string, n: number, from = 0): Item[] =>
  Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${tag} #${from + i}` }));

describe('A3: Idempotency-Key', () => {
  it('A3: 20 identical appends racing with one key land once; every answer is the first response', async () => {
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 1));
    const body = { messages: numbered('once', 3) };
    const key = `turn-${randomUUID()}`;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => api('POST', `/sessions/${id}/messages`, { body, headers: { 'idempotency-key': key } })),
    );

    const first = answers.filter((r) => !replayed(r));
    expect(first).toHaveLength(1);
    expect(first[0]!.status).toBe(200);
    expect(first[0]!.body).toMatchObject({ appended: 3, session: { messageCount: 5 } });
    for (const r of answers) expect([r.status, r.body]).toEqual([200, first[0]!.body]);
    expect(await readAll(api, id)).toEqual([...turns(0, 1), ...body.messages]);

    // A retry later still gets the first response and writes nothing.
    const later = await api('POST', `/sessions/${id}/messages`, { body, headers: { 'idempotency-key': key } });
    expect([later.status, later.body, replayed(later)]).toEqual([200, first[0]!.body, true]);
    expect((await api('GET', `/sessions/${id}`)).body.session.messageCount).toBe(5);
  });

  it('A3: the same key with another body is 422 idempotency_key_reused and writes nothing; keys are per session', async () => {
    const id = await createSession(api);
    const key = `k-${randomUUID()}`;
    const headers = { 'idempotency-key': key };
    expect((await api('POST', `/sessions/${id}/messages`, { body: { messages: numbered('a', 1) }, headers })).status).toBe(200);
    const reused = await api('POST', `/sessions/${id}/messages`, { body: { messages: numbered('b', 1) }, headers });
    expect([reused.status, reused.body.error.code]).toEqual([422, 'idempotency_key_reused']);
    expect(await readAll(api, id)).toEqual(numbered('a', 1));

    // The same key on another session of the tenant is another key.
    const other = await createSession(api);
    const there = await api('POST', `/sessions/${other}/messages`, { body: { messages: numbered('b', 1) }, headers });
    expect([there.status, replayed(there)]).toEqual([200, false]);
    expect(await readAll(api, other)).toEqual(numbered('b', 1));
  });

  it('A3: a retry re-serialized by another client (whitespace, key order, escapes) is a replay; another meaning is 422', async () => {
    const id = await createSession(api);
    const key = `reser-${randomUUID()}`;
    const headers = { 'idempotency-key': key };
    const items = [
      { role: 'user', content: 'café ☕', name: 'u1' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
    ];
    const first = await api('POST', `/sessions/${id}/messages`, {
      rawBody: JSON.stringify({ messages: items, expectedCount: 0 }),
      headers,
    });
    expect([first.status, replayed(first)]).toEqual([200, false]);
    // What a Python client sends on its retry: keys sorted its own way, ", " and ": " separators,
    // non-ASCII escaped, 0.0 for 0, and the top-level fields in another order.
    const python = `{"expectedCount": 0.0, "messages": [${items
      .map((it) => {
        const keys = Object.keys(it).sort().reverse();
        return `{${keys
          .map(
            (k) =>
              `${JSON.stringify(k)}: ${JSON.stringify((it as Record<string, unknown>)[k]).replace(/[^\x20-\x7e]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)}`,
          )
          .join(', ')}}`;
      })
      .join(',\n  ')}]}`;
    expect(python).not.toBe(JSON.stringify({ messages: items, expectedCount: 0 }));
    expect(JSON.parse(python)).toEqual({ messages: items, expectedCount: 0 });
    const retry = await api('POST', `/sessions/${id}/messages`, { rawBody: `\n ${python} \n`, headers });
    expect([retry.status, retry.body, replayed(retry)]).toEqual([200, first.body, true]);
    expect(await readAll(api, id)).toEqual(items);

    // One value changed (even only inside a nested object) is another request.
    const changed = structuredClone(items);
    changed[1]!.tool_calls![0]!.function.arguments = '{"a":2}';
    const other = await api('POST', `/sessions/${id}/messages`, { body: { messages: changed, expectedCount: 0 }, headers });
    expect([other.status, other.body.error.code]).toEqual([422, 'idempotency_key_reused']);
    expect(await readAll(api, id)).toEqual(items);
  });

  it('A3: a retried POST /sessions with a key makes one session, also when the retries race', async () => {
    const key = `create-${randomUUID()}`;
    const body = { format: 'responses', source: 'retry-test' };
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => api('POST', '/sessions', { body, headers: { 'idempotency-key': key } })),
    );
    const ids = new Set(answers.map((r) => r.body.session.sessionId as string));
    expect(ids.size).toBe(1);
    expect(answers.filter((r) => !replayed(r))).toHaveLength(1);
    for (const r of answers) expect([r.status, r.body]).toEqual([201, answers[0]!.body]);
    const [sessionId] = [...ids];
    expect((await api('GET', `/sessions/${sessionId}`)).body.session).toMatchObject({ format: 'responses', source: 'retry-test' });
    const reused = await api('POST', '/sessions', { body: { format: 'chat' }, headers: { 'idempotency-key': key } });
    expect([reused.status, reused.body.error.code]).toEqual([422, 'idempotency_key_reused']);
  });

  it('A3: a malformed Idempotency-Key is a 400 naming the header, and nothing is written', async () => {
    const id = await createSession(api);
    for (const key of ['k'.repeat(256), 'caf\u00e9']) {
      const res = await api('POST', `/sessions/${id}/messages`, {
        body: { messages: numbered('x', 1) },
        headers: { 'idempotency-key': key },
      });
      expect([res.status, res.body.field]).toEqual([400, 'Idempotency-Key']);
    }
    expect(await readAll(api, id)).toEqual([]);
  });
});

describe('A4: expectedCount', () => {
  it('A4: an append lands only at the expected position; otherwise 409 count_mismatch with the current count', async () => {
    const id = await createSession(api);
    await appendAll(api, id, numbered('base', 4));
    const ok = await api('POST', `/sessions/${id}/messages`, { body: { messages: numbered('next', 1), expectedCount: 4 } });
    expect(ok.body.session.messageCount).toBe(5);
    const stale = await api('POST', `/sessions/${id}/messages`, { body: { messages: numbered('stale', 1), expectedCount: 4 } });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ error: { code: 'count_mismatch' }, messageCount: 5 });

    // Two clients that both saw 5 items: exactly one lands.
    const racing = await Promise.all(
      ['left', 'right'].map((tag) => api('POST', `/sessions/${id}/messages`, { body: { messages: numbered(tag, 2), expectedCount: 5 } })),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([200, 409]);
    const loser = racing.find((r) => r.status === 409)!;
    expect(loser.body.messageCount).toBe(7);
    const items = await readAll(api, id);
    expect(items).toHaveLength(7);
    expect(items.slice(0, 5)).toEqual([...numbered('base', 4), ...numbered('next', 1)]);
  });
});

/** The decoded cursor names no table key, tenant or session (A5: opaque, never a raw key). */
function expectOpaque(cursor: string, sessionId: string): void {
  expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
  const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  for (const secret of ['MSG#', 'T#', 'META', sessionId, tenant]) expect(decoded).not.toContain(secret);
}

describe('A5: paging', () => {
  it('A5: paging 3,000 items while appends land returns every item once, in order', async () => {
    const id = await createSession(api);
    const seeded = numbered('p', 3000);
    await appendAll(api, id, seeded);
    // Appends land between every two pages (deterministically) and race the reads (concurrently).
    let paging = true;
    let raced = 0;
    const racer = (async () => {
      for (; paging; raced++) await appendAll(api, id, [{ role: 'user', content: `raced #${raced}` }]);
    })();
    const paged: Item[] = [];
    let between = 0;
    let pages = 0;
    for (let cursor: string | null = null, first = true; first || cursor; first = false) {
      const res: ApiResponse = await api('GET', `/sessions/${id}/messages?limit=250${cursor ? `&cursor=${cursor}` : ''}`);
      paged.push(...(res.body.messages as Item[]));
      cursor = res.body.nextCursor;
      pages++;
      if (cursor) {
        expectOpaque(cursor, id);
        await appendAll(api, id, [{ role: 'assistant', content: `between #${between++}` }]);
      }
    }
    paging = false;
    await racer;

    const all = await readAll(api, id);
    expect(all).toHaveLength(3000 + between + raced);
    expect(all.slice(0, 3000)).toEqual(seeded);
    expect(pages).toBeGreaterThanOrEqual(12);
    // Every item that landed before the last page was read is in the pages, once, in store order.
    expect(paged).toEqual(all.slice(0, paged.length));
    const contents = paged.map((m) => m.content as string);
    for (let i = 0; i < between; i++) expect(contents).toContain(`between #${i}`);
    expect(new Set(contents).size).toBe(contents.length);
  });

  it('A5: limit is 1-1000 (default 500); bad, foreign and tampered cursors are 400s naming the cursor', async () => {
    const id = await createSession(api);
    await appendAll(api, id, numbered('l', 1200));
    for (const limit of ['0', '1001', '-1', 'abc', '1.5']) {
      const res = await api('GET', `/sessions/${id}/messages?limit=${limit}`);
      expect([res.status, res.body.field]).toEqual([400, 'limit']);
    }
    expect((await api('GET', `/sessions/${id}/messages?limit=1`)).body.messages).toEqual(numbered('l', 1));
    expect((await api('GET', `/sessions/${id}/messages?limit=1000`)).body.messages).toHaveLength(1000);
    const first = await api('GET', `/sessions/${id}/messages`);
    expect(first.body.messages).toHaveLength(500);

    const other = await createSession(api);
    await appendAll(api, other, numbered('o', 600));
    const foreign = (await api('GET', `/sessions/${other}/messages`)).body.nextCursor as string;
    const cursor = first.body.nextCursor as string;
    const raw = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Record<string, unknown>;
    const rebound = Buffer.from(JSON.stringify({ ...raw, s: 'AAAAAAAAAA' })).toString('base64url');
    for (const bad of [foreign, 'not-a-cursor', 'eyJ2IjoxfQ', rebound, `${cursor}x`, '%00', 'MSG%230000000000%230000000001']) {
      const res = await api('GET', `/sessions/${id}/messages?cursor=${bad}`);
      expect([res.status, res.body.field], bad).toEqual([400, 'cursor']);
    }
    const both = await api('GET', `/sessions/${id}/messages?tail=2&cursor=${cursor}`);
    expect([both.status, both.body.field]).toEqual([400, 'tail']);
  });

  it('A5: a cursor into a generation that an in-place compaction replaced is 409 cursor_stale', async () => {
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 6));
    const cursor = (await api('GET', `/sessions/${id}/messages?limit=3`)).body.nextCursor as string;
    expect((await api('POST', `/sessions/${id}/compress`, { body: { keepLast: 2 } })).body.outcome).toBe('compressed');
    const res = await api('GET', `/sessions/${id}/messages?cursor=${cursor}`);
    expect([res.status, res.body.error.code]).toEqual([409, 'cursor_stale']);
  });

  it('A5: a page of large items stays under 5 MB whatever the limit; paging still returns every item', async () => {
    const id = await createSession(api);
    const big = Array.from({ length: 15 }, (_, i) => ({ role: 'tool', tool_call_id: `c${i}`, content: `${i}:${singleRunText(360_000)}` }));
    await appendAll(api, id, big, 2); // two 360 KB items per request stay under the 1 MiB body limit
    const first = await api('GET', `/sessions/${id}/messages?limit=1000`);
    expect(Buffer.byteLength(JSON.stringify(first.body))).toBeLessThan(5_000_000);
    expect(first.body.messages.length).toBeLessThan(15);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const paged = await readPages(api, id, 1000);
    expect(paged.items).toEqual(big);
    expect(paged.pages).toBeGreaterThan(1);

    // A tail is cut by size too: the newest items, in order, the oldest dropped.
    const tail = await api('GET', `/sessions/${id}/messages?tail=15`);
    expect(Buffer.byteLength(JSON.stringify(tail.body))).toBeLessThan(5_000_000);
    expect(tail.body.messages.length).toBeGreaterThan(0);
    expect(tail.body.messages).toEqual(big.slice(-tail.body.messages.length));
    expect(tail.body.messages.length).toBeLessThan(15);
  });
});
