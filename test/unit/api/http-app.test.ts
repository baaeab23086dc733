// Validation and error mapping of the HTTP API, on synthetic API Gateway v2 events (SPEC F1, F2,
// A1-A6, issue 11). Store errors are the real error classes thrown by a fake store: the mapping is
// what is under test here; the real store is exercised end to end in test/e2e.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import type { CompactionOutcome } from '../../../lib/compaction/types.js';
import type { Item } from '../../../lib/items/types.js';
import { LeaseUnavailableError } from '../../../lib/lease/errors.js';
import {
  CountMismatchError,
  IdempotencyKeyReusedError,
  ItemTooLargeError,
  SessionEndedError,
  SessionNotFoundError,
  CursorStaleError,
  StoreRetryableError,
} from '../../../lib/lineage/errors.js';
import type { AppendInput, LineageStore, SessionRecord } from '../../../lib/lineage/types.js';

const KEY = 'slk_test-key';
const OTHER_KEY = 'slk_other-tenant';

function event(
  method: string,
  path: string,
  opts: { body?: string; headers?: Record<string, string>; base64?: boolean; query?: Record<string, string> } = {},
): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: {
      authorization: `Bearer ${KEY}`,
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    },
    requestContext: { http: { method, path } },
    ...(opts.query ? { queryStringParameters: opts.query } : {}),
    ...(opts.body !== undefined
      ? { body: opts.base64 ? Buffer.from(opts.body).toString('base64') : opts.body, isBase64Encoded: !!opts.base64 }
      : {}),
  } as unknown as APIGatewayProxyEventV2;
}

const session: SessionRecord = {
  tenantId: 't1',
  sessionId: 's1',
  format: 'chat',
  createdAt: '2024-01-01T00:00:00.000Z',
  generation: 1,
  messageCount: 0,
  lastSeq: 0,
  tokenEstimate: 0,
  fence: 3,
};

const owns = (ref: { tenantId: string; sessionId: string }) => ref.tenantId === 't1' && ref.sessionId === 's1';

function deps(over: Partial<LineageStore> = {}, compact?: (o: unknown) => Promise<CompactionOutcome>) {
  const store = {
    getSession: vi.fn(async (ref: { tenantId: string; sessionId: string }) => (owns(ref) ? session : null)),
    createSession: vi.fn(async () => ({ replayed: false, session })),
    appendItems: vi.fn(async (ref: { tenantId: string; sessionId: string }, input: AppendInput) => {
      if (!owns(ref)) throw new SessionNotFoundError(ref.sessionId);
      const prepared = input.prepare(session);
      return { replayed: false, session: { ...session, messageCount: prepared.items.length }, appended: prepared.items.length };
    }),
    readPage: vi.fn(async () => ({ session, items: [{ role: 'user', content: 'a' }], next: { generation: 1, afterSeq: 1 } })),
    readTail: vi.fn(async () => ({ session, items: [{ role: 'user', content: 'z' }], truncated: true })),
    ...over,
  } as unknown as LineageStore;
  const logger = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() };
  const publisher = { publish: vi.fn(async () => undefined) };
  const d: ApiDeps = {
    store,
    apiKeys: { resolve: async (k) => (k === KEY ? 't1' : k === OTHER_KEY ? 't2' : null) },
    compact: vi.fn(
      compact ??
        (async () => {
          throw new Error('not expected');
        }),
    ),
    publisher,
    logger,
    maxBodyBytes: 1000,
  };
  return { d, logger, publisher, store };
}

const run = async (d: ApiDeps, e: APIGatewayProxyEventV2) => {
  const r = await handleHttpRequest(e, d, { requestId: 'req-1' });
  return { status: r.statusCode, headers: r.headers ?? {}, body: JSON.parse(r.body ?? 'null') };
};

const append = (messages: unknown[], headers: Record<string, string> = {}) =>
  event('POST', '/sessions/s1/messages', { body: JSON.stringify({ messages }), headers });

describe('HTTP API validation', () => {
  it('F2: 401 before anything else for a missing or unknown key', async () => {
    const { d, store } = deps();
    expect((await run(d, event('GET', '/sessions/s1', { headers: { authorization: '' } }))).status).toBe(401);
    const r = await run(d, event('GET', '/sessions/s1', { headers: { authorization: 'Bearer slk_nobody' } }));
    expect(r).toMatchObject({ status: 401, body: { error: { code: 'unauthorized', message: 'invalid API key' } } });
    expect(r.headers['www-authenticate']).toBe('Bearer');
    expect(store.getSession).not.toHaveBeenCalled();
  });

  it("F2: a second tenant's key reaches the store scoped to that tenant only, and gets 404 for the first tenant's session", async () => {
    const { d, store } = deps();
    const r = await run(d, event('GET', '/sessions/s1', { headers: { authorization: `Bearer ${OTHER_KEY}` } }));
    expect(r).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect(store.getSession).toHaveBeenCalledWith({ tenantId: 't2', sessionId: 's1' });
    const w = await run(d, append([{ role: 'user', content: 'x' }], { authorization: `Bearer ${OTHER_KEY}` }));
    expect(w.status).toBe(404);
    expect(store.appendItems).toHaveBeenCalledWith({ tenantId: 't2', sessionId: 's1' }, expect.anything());
    // The owner still reads it.
    expect((await run(d, event('GET', '/sessions/s1'))).status).toBe(200);
  });

  it('A1/F1: a 400 names the item index and the field', async () => {
    const { d } = deps();
    const r = await run(
      d,
      append([
        { role: 'user', content: 'ok' },
        { role: 'bot', content: 'x' },
      ]),
    );
    expect(r.status).toBe(400);
    expect(r.body.field).toBe('messages[1].role');
    expect(r.body.error.message).toMatch(/^messages\[1\]\.role: /);
    const extra = await run(d, event('POST', '/sessions', { body: JSON.stringify({ sauce: 1 }) }));
    expect(extra.status).toBe(400);
    expect(extra.body.error.message).toContain('sauce');
    const empty = await run(d, event('POST', '/sessions/s1/messages', { body: JSON.stringify({ messages: [] }) }));
    expect(empty.body.field).toBe('messages');
  });

  it('A7: an append of any count is one store call (1,000 items)', async () => {
    const { d } = deps();
    d.maxBodyBytes = 5_242_880;
    const batch = (n: number) => Array.from({ length: n }, (_, i) => ({ role: 'user', content: `m${i}` }));
    expect((await run(d, append(batch(1000)))).status).toBe(200);
    expect(d.store.appendItems).toHaveBeenCalledTimes(1);
    expect(vi.mocked(d.store.appendItems).mock.calls[0]![1].prepare).toBeDefined();
  });

  it('A3: Idempotency-Key must be 1-255 printable characters; its digest is of the body', async () => {
    const { d, store } = deps();
    const bad = await run(d, append([{ role: 'user', content: 'x' }], { 'idempotency-key': 'x'.repeat(256) }));
    expect(bad).toMatchObject({ status: 400, body: { field: 'Idempotency-Key' } });
    const ctl = await run(d, append([{ role: 'user', content: 'x' }], { 'idempotency-key': 'a\u0007b' }));
    expect(ctl.status).toBe(400);
    await run(d, append([{ role: 'user', content: 'x' }], { 'idempotency-key': 'k-1' }));
    const input = vi.mocked(store.appendItems).mock.calls.at(-1)![1];
    expect(input.idempotency).toMatchObject({ key: 'k-1', requestHash: expect.stringMatching(/^[\w-]{43}$/) });
  });

  it('A3: a replayed response carries the first status and body and Idempotent-Replayed: true; nothing is published', async () => {
    const { d, publisher } = deps({
      appendItems: vi.fn(async () => ({ replayed: true, response: { status: 200, body: { first: true } } })) as never,
    });
    const r = await run(d, append([{ role: 'user', content: 'x' }], { 'idempotency-key': 'k' }));
    expect(r).toMatchObject({ status: 200, body: { first: true } });
    expect(r.headers['idempotent-replayed']).toBe('true');
    expect(publisher.publish).not.toHaveBeenCalled();
  });

  it('F1: path ids must match the strict pattern', async () => {
    const { d, store } = deps();
    for (const id of ['..%2F..', 'a%20b', '-leading', 'x'.repeat(129), '%E0%A4%A']) {
      const r = await run(d, event('GET', `/sessions/${id}`));
      expect(r.status, id).toBe(400);
      expect(r.body.field).toBe('id');
    }
    expect(store.getSession).not.toHaveBeenCalled();
  });

  it('F1: 413 by declared length and by actual size (base64 bodies decoded first); 415 for non-JSON', async () => {
    const { d } = deps();
    expect((await run(d, event('POST', '/sessions', { body: '{}', headers: { 'content-length': '5000' } }))).status).toBe(413);
    const big = JSON.stringify({ source: 'x'.repeat(1200) });
    expect((await run(d, event('POST', '/sessions', { body: big, base64: true }))).status).toBe(413);
    const small = await run(d, event('POST', '/sessions', { body: JSON.stringify({ source: 'b64' }), base64: true }));
    expect(small.status).toBe(201);
    const r = await run(d, event('POST', '/sessions', { body: '{}', headers: { 'content-type': 'text/plain' } }));
    expect(r).toMatchObject({ status: 415, body: { error: { code: 'unsupported_media_type' } } });
    expect(
      (await run(d, event('POST', '/sessions', { body: '{}', headers: { 'content-type': 'application/json; charset=utf-8' } }))).status,
    ).toBe(201);
  });

  it('issue 11: a non-UTF-8 charset is 415; bytes that are not UTF-8 are 400; nothing is written', async () => {
    const { d, store } = deps();
    for (const type of ['application/json; charset=latin1', 'application/json;charset="ISO-8859-1"', 'application/json; charset=utf-16']) {
      const r = await run(d, event('POST', '/sessions', { body: '{}', headers: { 'content-type': type } }));
      expect(r, type).toMatchObject({ status: 415, body: { error: { code: 'unsupported_media_type' } } });
    }
    const latin1 = Buffer.from('{"source":"caf\xe9"}', 'latin1').toString('base64');
    const r = await handleHttpRequest({ ...event('POST', '/sessions', { body: 'x' }), body: latin1, isBase64Encoded: true }, d, {
      requestId: 'r',
    });
    expect(r.statusCode).toBe(400);
    expect(JSON.parse(r.body!).error.code).toBe('invalid_json');
    expect(store.createSession).not.toHaveBeenCalled();
  });

  it('issue 11: numbers JSON cannot carry exactly are refused, naming the field; exact ones are accepted', async () => {
    const { d, store } = deps();
    for (const [text, field] of [
      ['{"metadata":{"n":12345678901234567890}}', 'metadata.n'],
      ['{"metadata":{"a":[1,{"x":1e400}]}}', 'metadata.a[1].x'],
      ['{"metadata":{"tiny":1e-400}}', 'metadata.tiny'],
      ['{"metadata":{"p":0.1000000000000000055511151231257827021181583404541015625000001}}', 'metadata.p'],
    ] as const) {
      const r = await run(d, event('POST', '/sessions', { body: text }));
      expect(r, text).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' }, field } });
    }
    expect(store.createSession).not.toHaveBeenCalled();
    for (const ok of [
      '{"metadata":{"n":9007199254740991}}',
      '{"metadata":{"n":1e21}}',
      '{"metadata":{"n":1e-131,"m":-0,"f":0.10}}',
      '{"metadata":{"s":"12345678901234567890"}}',
    ]) {
      expect((await run(d, event('POST', '/sessions', { body: ok }))).status, ok).toBe(201);
    }
  });

  it('issue 11: metadata has a size cap, a depth cap and a key-length cap, each a 400 naming the field', async () => {
    const { d, store } = deps();
    d.maxBodyBytes = 1_048_576;
    let deep: unknown = 1;
    for (let i = 0; i < 20; i++) deep = { d: deep };
    const cases: [unknown, RegExp][] = [
      [{ big: 'x'.repeat(20_000) }, /^metadata: is \d+ bytes/],
      [deep, /nested deeper than 16/],
      [{ ['k'.repeat(300)]: 1 }, /key longer than 256/],
    ];
    for (const [metadata, message] of cases) {
      const r = await run(d, event('POST', '/sessions', { body: JSON.stringify({ metadata }) }));
      expect(r.status).toBe(400);
      expect(r.body.error.message).toMatch(message);
      expect(r.body.field).toMatch(/^metadata/);
    }
    // An empty key and deep-ish (within the cap) metadata are what the store can hold: accepted.
    expect(
      (await run(d, event('POST', '/sessions', { body: JSON.stringify({ metadata: { '': 1, a: { b: { c: [1, [2]] } } } }) }))).status,
    ).toBe(201);
    expect(store.createSession).toHaveBeenCalledTimes(1);
  });

  it('issue 11: a body nested deeper than 64 levels is a 400, never a stack overflow', async () => {
    const { d } = deps();
    d.maxBodyBytes = 1_048_576;
    const body = `{"messages":[${'['.repeat(100_000)}${']'.repeat(100_000)}]}`;
    const r = await run(d, event('POST', '/sessions/s1/messages', { body }));
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/nested deeper than 64/);
  });

  it('F1: an empty POST body means {} (optional bodies), a GET ignores the body', async () => {
    const { d } = deps();
    const r = await handleHttpRequest({ ...event('POST', '/sessions'), headers: { authorization: `Bearer ${KEY}` } }, d, {
      requestId: 'r',
    });
    expect(r.statusCode).toBe(201);
  });

  it('F1: a JSON null (or any non-object) body is a 400, not an absent body', async () => {
    const { d } = deps();
    for (const body of ['null', '[]', '42', '"x"', 'true']) {
      for (const path of ['/sessions', '/sessions/s1/compress']) {
        const r = await run(d, event('POST', path, { body }));
        expect(r.status, `${path} ${body}`).toBe(400);
        expect(r.body.error.code).toBe('invalid_request');
      }
    }
    // As serverless-offline delivers a JSON `null`: no body text, but a declared length.
    const lost = await handleHttpRequest(
      {
        ...event('POST', '/sessions'),
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'content-length': '4' },
      },
      d,
      { requestId: 'r' },
    );
    expect(lost.statusCode).toBe(400);
    expect(d.store.createSession).not.toHaveBeenCalled();
    expect(d.compact).not.toHaveBeenCalled();
  });

  it('A5: limit, cursor and tail are validated; tail cannot be combined; an unknown parameter is a 400', async () => {
    const { d, store } = deps();
    const get = (query: Record<string, string>) => run(d, event('GET', '/sessions/s1/messages', { query }));
    for (const [query, field] of [
      [{ limit: '0' }, 'limit'],
      [{ limit: '1001' }, 'limit'],
      [{ limit: 'ten' }, 'limit'],
      [{ tail: '-1' }, 'tail'],
      [{ tail: '5', cursor: 'abc' }, 'tail'],
      [{ cursor: 'not a cursor!' }, 'cursor'],
      [{ page: '2' }, 'query'],
    ] as const) {
      const r = await get(query);
      expect(r.status, JSON.stringify(query)).toBe(400);
      expect(r.body.field, JSON.stringify(query)).toBe(field);
    }
    expect(store.readPage).not.toHaveBeenCalled();
    const page = await get({ limit: '1' });
    expect(page).toMatchObject({ status: 200, body: { messages: [{ content: 'a' }], nextCursor: expect.stringMatching(/^[\w-]+$/) } });
    expect(page.body.nextCursor).not.toContain('MSG#');
    const next = await get({ cursor: page.body.nextCursor });
    expect(next.status).toBe(200);
    expect(vi.mocked(store.readPage).mock.calls.at(-1)![1]).toMatchObject({ from: { generation: 1, afterSeq: 1 }, limit: 500 });
    // A tail cut by the size bound says so; every page carries the session it was read from.
    expect(await get({ tail: '3' })).toMatchObject({
      status: 200,
      body: { messages: [{ content: 'z' }], nextCursor: null, truncated: true, session: { sessionId: 's1', endedAt: null } },
    });
    expect(page.body).toMatchObject({ truncated: false, session: { sessionId: 's1' } });
  });
});

describe('HTTP API error mapping', () => {
  const one = [{ role: 'user', content: 'x' }];

  it('F1/C4: SessionEndedError -> 409 naming the live session; CountMismatchError -> 409 with messageCount', async () => {
    const ended = deps({
      appendItems: async () => {
        throw new SessionEndedError('s1', 's3');
      },
    }).d;
    expect(await run(ended, append(one))).toMatchObject({ status: 409, body: { error: { code: 'session_ended' }, liveSessionId: 's3' } });
    const counted = deps({
      appendItems: async () => {
        throw new CountMismatchError('s1', 2, 5);
      },
    }).d;
    expect(await run(counted, append(one))).toMatchObject({ status: 409, body: { error: { code: 'count_mismatch' }, messageCount: 5 } });
  });

  it('A3/A5: a reused key is 422; a stale cursor is 409 cursor_stale', async () => {
    const reused = deps({
      appendItems: async () => {
        throw new IdempotencyKeyReusedError('k');
      },
    }).d;
    expect(await run(reused, append(one, { 'idempotency-key': 'k' }))).toMatchObject({
      status: 422,
      body: { error: { code: 'idempotency_key_reused' } },
    });
    const stale = deps({
      readPage: async () => {
        throw new CursorStaleError('s1');
      },
    }).d;
    expect(await run(stale, event('GET', '/sessions/s1/messages'))).toMatchObject({
      status: 409,
      body: { error: { code: 'cursor_stale' } },
    });
  });

  it('F1: ItemTooLargeError -> 413 naming the item; retryable store errors -> 503 + Retry-After', async () => {
    const big = deps({
      appendItems: async () => {
        throw new ItemTooLargeError(0, 500_000, 380_000);
      },
    }).d;
    const r = await run(big, append(one));
    expect(r).toMatchObject({
      status: 413,
      body: { error: { code: 'payload_too_large', message: expect.stringContaining('messages[0]') } },
    });
    const busy = deps({
      getSession: async () => {
        throw new StoreRetryableError('throttled');
      },
    }).d;
    const b = await run(busy, event('GET', '/sessions/s1'));
    expect(b.status).toBe(503);
    expect(b.headers['retry-after']).toBe('2');
  });

  it('F1: 500 never leaks internals, and the log keeps them', async () => {
    const { d, logger } = deps({
      getSession: async () => {
        throw new Error('ECONNREFUSED 10.0.0.7:8000 secret-table');
      },
    });
    const r = await run(d, event('GET', '/sessions/s1'));
    expect(r).toEqual({
      status: 500,
      headers: expect.any(Object),
      body: { error: { code: 'internal', message: 'internal error', requestId: 'req-1' } },
    });
    expect(JSON.stringify(r.body)).not.toContain('ECONNREFUSED');
    expect(logger.error).toHaveBeenCalledWith(
      'unhandled error',
      expect.objectContaining({ error: expect.objectContaining({ message: expect.stringContaining('ECONNREFUSED') }) }),
    );
  });

  it('P2: compress takes the lease before any session read: an unknown session is answered by the attempt (404), not a pre-read', async () => {
    const { d, store } = deps({}, async () => {
      throw new SessionNotFoundError('s9');
    });
    const r = await run(d, event('POST', '/sessions/s9/compress', { body: '{}' }));
    expect(r).toMatchObject({ status: 404, body: { error: { code: 'not_found', message: 'session s9 not found' } } });
    expect(d.compact).toHaveBeenCalledWith(expect.objectContaining({ ref: { tenantId: 't1', sessionId: 's9' } }));
    expect(store.getSession).not.toHaveBeenCalled();
  });

  it('F1/issue 11: skipped/lease_unavailable -> 503 with the error shape and Retry-After; LeaseUnavailableError too', async () => {
    const base = { sessionId: 's1', warnings: [] };
    const unavailable = deps({}, async () => ({ ...base, outcome: 'skipped', reason: 'lease_unavailable' }));
    const r = await run(unavailable.d, event('POST', '/sessions/s1/compress', { body: '{"mode":"rotate"}' }));
    expect(r).toMatchObject({ status: 503, body: { error: { code: 'lease_unavailable', message: expect.any(String) } } });
    expect(r.body).not.toHaveProperty('outcome');
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(unavailable.d.compact).toHaveBeenCalledWith(
      expect.objectContaining({ ref: { tenantId: 't1', sessionId: 's1' }, mode: 'rotate', origin: 'manual', holder: 'http:req-1' }),
    );
    const thrown = deps({}, async () => {
      throw new LeaseUnavailableError('t1/s1', ['down']);
    });
    expect(await run(thrown.d, event('POST', '/sessions/s1/compress', { body: '{}' }))).toMatchObject({
      status: 503,
      body: { error: { code: 'lease_unavailable' } },
    });
  });

  it('C1: locked, lease_lost, stale, adopted, cancelled, noop -> 200 without messages; compressed carries them', async () => {
    const base = { sessionId: 's1', warnings: [] };
    for (const reason of ['locked', 'lease_lost', 'stale'] as const) {
      const { d } = deps({}, async () => ({ ...base, outcome: 'skipped', reason, holder: 'other#1' }));
      const res = await run(d, event('POST', '/sessions/s1/compress', { body: '{}' }));
      expect(res).toMatchObject({ status: 200, body: { outcome: 'skipped', reason, sessionId: 's1' } });
      expect(res.body).not.toHaveProperty('messages');
      expect(res.headers?.['retry-after']).toBeUndefined();
    }
    const cancelled = deps({}, async () => ({ ...base, outcome: 'cancelled' }));
    expect(await run(cancelled.d, event('POST', '/sessions/s1/compress', { body: '{}' }))).toMatchObject({
      status: 200,
      body: { outcome: 'cancelled' },
    });
    const adopted = deps({}, async () => ({ ...base, sessionId: 's2', outcome: 'skipped', reason: 'adopted' }));
    expect(await run(adopted.d, event('POST', '/sessions/s1/compress', { body: '{}' }))).toMatchObject({
      status: 200,
      body: { reason: 'adopted', sessionId: 's2' },
    });
    const done = deps({}, async () => ({
      ...base,
      outcome: 'compressed',
      mode: 'rotate',
      previousSessionId: 's1',
      items: [{ role: 'assistant', content: 's' }],
      commitMs: 3,
    }));
    expect(await run(done.d, event('POST', '/sessions/s1/compress', { body: '{}' }))).toMatchObject({
      status: 200,
      body: { messages: [{ content: 's' }] },
    });
  });

  it('F1/F3: a failing after-turn publish is logged and never fails the append; client extras are kept verbatim', async () => {
    const { d, logger, publisher, store } = deps();
    publisher.publish.mockRejectedValueOnce(new Error('queue down'));
    const item = { role: 'user', content: 'hi', name: 'alice', custom: { nested: [1, null] } };
    const r = await run(d, append([item]));
    expect(r).toMatchObject({ status: 200, body: { appended: 1 } });
    expect(publisher.publish).toHaveBeenCalledWith({ tenantId: 't1', sessionId: 's1', origin: 'turn', correlationId: 'req-1' });
    expect(logger.warn).toHaveBeenCalledWith(
      'after-turn publish failed',
      expect.objectContaining({ error: expect.objectContaining({ message: expect.stringContaining('queue down') }) }),
    );
    const input = vi.mocked(store.appendItems).mock.calls[0]![1];
    expect(input.prepare(session).items).toEqual([item]);
  });

  it("F3: with a threshold set, a turn is published only once the session's estimate passes it", async () => {
    const { d, publisher } = deps();
    d.publishAboveTokens = 10;
    await run(d, append([{ role: 'user', content: 'small' }]));
    expect(publisher.publish).not.toHaveBeenCalled();
  });

  it('F1: session views never expose fences, tenants or attempts; every response carries x-request-id', async () => {
    const { d } = deps();
    const r = await run(d, event('GET', '/sessions/s1'));
    expect(r.body.session).not.toHaveProperty('fence');
    expect(r.body.session).not.toHaveProperty('tenantId');
    expect(r.body.session).toMatchObject({
      sessionId: 's1',
      format: 'chat',
      parentSessionId: null,
      childSessionId: null,
      endedAt: null,
      messageCount: 0,
    });
    expect(r.headers['x-request-id']).toBe('req-1');
    expect((await run(d, event('GET', '/nope'))).headers['x-request-id']).toBe('req-1');
  });

  it('A6: DELETE routes answer 204 (no body) and {removed, session}', async () => {
    const { d } = deps({
      deleteSession: vi.fn(async () => undefined),
      popLast: vi.fn(async () => ({ session, removed: { role: 'user', content: 'gone' } })),
    });
    const del = await handleHttpRequest(event('DELETE', '/sessions/s1'), d, { requestId: 'r' });
    expect(del.statusCode).toBe(204);
    expect(del.body).toBeUndefined();
    expect(await run(d, event('DELETE', '/sessions/s1/messages/last'))).toMatchObject({
      status: 200,
      body: { removed: { content: 'gone' }, session: { sessionId: 's1' } },
    });
    expect(await run(d, event('DELETE', '/sessions/s1/messages'))).toMatchObject({ status: 405 });
  });

  it('A6/C13: the lineage tip is the live session; a deleted last session leaves none (tip: null)', async () => {
    const child: SessionRecord = { ...session, sessionId: 's2', parentSessionId: 's1' };
    const ended: SessionRecord = { ...session, childSessionId: 's2', endedAt: '2024-01-02T00:00:00.000Z' };
    const lineage = vi.fn(async () => [ended, child]);
    const { d } = deps({ lineage });
    expect(await run(d, event('GET', '/sessions/s1/lineage'))).toMatchObject({ status: 200, body: { tip: 's2' } });
    lineage.mockResolvedValueOnce([ended, { ...child, deletedAt: '2024-01-03T00:00:00.000Z' }]);
    const gone = await run(d, event('GET', '/sessions/s1/lineage'));
    expect(gone).toMatchObject({
      status: 200,
      body: { tip: null, chain: [{ sessionId: 's1' }, { sessionId: 's2', deletedAt: expect.any(String) }] },
    });
  });
});

// Found by the adversarial pass: two answers had no size bound, though Lambda refuses a response
// over 6 MB (API Gateway then answers 502 / 500 without our JSON, after the work is done).
describe('responses stay under the 6 MB Lambda payload limit (F1, A5; found by the adversarial pass)', () => {
  const LAMBDA_LIMIT = 6 * 1024 * 1024;
  const bytes = (r: Awaited<ReturnType<typeof handleHttpRequest>>) => Buffer.byteLength(r.body ?? '', 'utf8');
  const compressedWith = (items: Item[]) =>
    deps({}, async () => ({
      sessionId: 's1',
      warnings: [],
      outcome: 'compressed',
      mode: 'in_place',
      previousSessionId: 's1',
      items,
      commitMs: 3,
    })).d;

  it('F1/A5: a compressed outcome whose kept tail holds large tool results (20 x 350 KB) answers its leading items, truncated', async () => {
    const items = Array.from({ length: 20 }, (_, i) => ({ role: 'tool', tool_call_id: `c${i}`, content: 'A'.repeat(350_000) }));
    const r = await handleHttpRequest(event('POST', '/sessions/s1/compress', { body: '{"keepLast":20}' }), compressedWith(items), {
      requestId: 'req-1',
    });
    expect(r.statusCode).toBe(200);
    expect(bytes(r)).toBeLessThan(LAMBDA_LIMIT);
    const body = JSON.parse(r.body!) as { messages: unknown[]; truncated: boolean };
    expect(body.truncated).toBe(true);
    // The leading items, in order, as many as fit in one page's bytes (4.5 MB: 12 of 350 KB).
    expect(body.messages).toEqual(items.slice(0, 12));
  });

  it('A5: a compressed outcome that fits is answered whole with truncated: false', async () => {
    const items = [
      { role: 'assistant', content: 'summary' },
      { role: 'user', content: '\u{1F600}'.repeat(10) },
    ];
    const r = await handleHttpRequest(event('POST', '/sessions/s1/compress', { body: '{}' }), compressedWith(items), {
      requestId: 'req-1',
    });
    expect(JSON.parse(r.body!)).toMatchObject({ messages: items, truncated: false });
  });

  it('F1: the lineage of a 1,000-session chain whose sessions carry 16 KiB metadata is answered under 6 MB, without metadata', async () => {
    const metadata = { notes: 'm'.repeat(16_000) };
    const chain: SessionRecord[] = Array.from({ length: 1000 }, (_, i) => ({
      ...session,
      sessionId: `s${i + 1}`,
      metadata,
      source: 's'.repeat(200),
      ...(i > 0 ? { parentSessionId: `s${i}` } : {}),
      ...(i < 999 ? { childSessionId: `s${i + 2}`, endedAt: '2024-01-02T00:00:00.000Z' } : {}),
    }));
    const { d } = deps({ lineage: vi.fn(async () => chain) });
    const r = await handleHttpRequest(event('GET', '/sessions/s1/lineage'), d, { requestId: 'req-1' });
    expect(r.statusCode).toBe(200);
    expect(bytes(r)).toBeLessThan(LAMBDA_LIMIT);
    const body = JSON.parse(r.body!) as { chain: Record<string, unknown>[]; tip: string };
    expect(body.chain).toHaveLength(1000);
    expect(body.chain.every((e) => !('metadata' in e))).toBe(true);
    expect(body.tip).toBe('s1000');
  });
});
