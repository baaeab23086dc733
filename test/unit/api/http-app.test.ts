// Validation and error mapping of the HTTP API, on synthetic API Gateway v2 events (SPEC F1, F2).
// Store errors are real error classes thrown by a fake store: the mapping is what is under test.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { handleHttpRequest, type ApiDeps } from '../../../lib/api/http-app.js';
import type { CompactionOutcome } from '../../../lib/compaction/types.js';
import { MessageTooLargeError, SessionEndedError, StoreRetryableError } from '../../../lib/lineage/errors.js';
import type { LineageStore, SessionRecord } from '../../../lib/lineage/types.js';

const KEY = 'slk_test-key';

function event(method: string, path: string, opts: { body?: string; headers?: Record<string, string>; base64?: boolean } = {}): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: { authorization: `Bearer ${KEY}`, ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    requestContext: { http: { method, path } },
    ...(opts.body !== undefined ? { body: opts.base64 ? Buffer.from(opts.body).toString('base64') : opts.body, isBase64Encoded: !!opts.base64 } : {}),
  } as unknown as APIGatewayProxyEventV2;
}

const session: SessionRecord = { tenantId: 't1', sessionId: 's1', createdAt: '2024-01-01T00:00:00.000Z', generation: 1, messageCount: 0, lastSeq: 0, fence: 3 };

function deps(over: Partial<LineageStore> = {}, compact?: (o: unknown) => Promise<CompactionOutcome>) {
  const store = {
    getSession: vi.fn(async (ref: { tenantId: string; sessionId: string }) => (ref.tenantId === 't1' && ref.sessionId === 's1' ? session : null)),
    createSession: vi.fn(async () => session),
    appendMessages: vi.fn(async () => ({ session: { ...session, messageCount: 1 }, appended: 1 })),
    ...over,
  } as unknown as LineageStore;
  const logger = { info: vi.fn(), warn: vi.fn(), error: vi.fn() };
  const publisher = { publish: vi.fn(async () => undefined) };
  const d: ApiDeps = {
    store,
    apiKeys: { resolve: async (k) => (k === KEY ? 't1' : null) },
    compact: vi.fn(compact ?? (async () => { throw new Error('not expected'); })),
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

describe('HTTP API validation', () => {
  it('F2: 401 before anything else for a missing or unknown key', async () => {
    const { d, store } = deps();
    expect((await run(d, event('GET', '/sessions/s1', { headers: { authorization: '' } }))).status).toBe(401);
    const r = await run(d, event('GET', '/sessions/s1', { headers: { authorization: 'Bearer slk_other' } }));
    expect(r).toMatchObject({ status: 401, body: { error: { code: 'unauthorized', message: 'invalid API key' } } });
    expect(r.headers['www-authenticate']).toBe('Bearer');
    expect(store.getSession).not.toHaveBeenCalled();
  });

  it('F1: 400 names the first offending field from the zod issues', async () => {
    const { d } = deps();
    const r = await run(d, event('POST', '/sessions/s1/messages', { body: JSON.stringify({ messages: [{ role: 'user' }] }) }));
    expect(r.status).toBe(400);
    expect(r.body.field).toBe('messages.0.content');
    expect(r.body.error.message).toMatch(/^messages\.0\.content: /);
    const extra = await run(d, event('POST', '/sessions', { body: JSON.stringify({ sauce: 1 }) }));
    expect(extra.status).toBe(400);
    expect(extra.body.error.message).toContain('sauce');
    const empty = await run(d, event('POST', '/sessions/s1/messages', { body: JSON.stringify({ messages: [] }) }));
    expect(empty.body.field).toBe('messages');
  });

  it('I4/F1: an append is one store transaction: 99 messages are accepted, 100 are a 400 and nothing is written', async () => {
    const { d } = deps();
    d.maxBodyBytes = 1_048_576;
    const batch = (n: number) => JSON.stringify({ messages: Array.from({ length: n }, (_, i) => ({ role: 'user', content: `m${i}` })) });
    expect((await run(d, event('POST', '/sessions/s1/messages', { body: batch(99) }))).status).toBe(200);
    expect(d.store.appendMessages).toHaveBeenCalledTimes(1);
    const tooMany = await run(d, event('POST', '/sessions/s1/messages', { body: batch(100) }));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.field).toBe('messages');
    expect(d.store.appendMessages).toHaveBeenCalledTimes(1);
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
    expect((await run(d, event('POST', '/sessions', { body: '{}', headers: { 'content-type': 'application/json; charset=utf-8' } }))).status).toBe(201);
  });

  it('F1: an empty POST body means {} (optional bodies), a GET ignores the body', async () => {
    const { d } = deps();
    const r = await handleHttpRequest({ ...event('POST', '/sessions'), headers: { authorization: `Bearer ${KEY}` } }, d, { requestId: 'r' });
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
    const lost = await handleHttpRequest({ ...event('POST', '/sessions'), headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'content-length': '4' } }, d, { requestId: 'r' });
    expect(lost.statusCode).toBe(400);
    expect(d.store.createSession).not.toHaveBeenCalled();
    expect(d.compact).not.toHaveBeenCalled();
  });
});

describe('HTTP API error mapping', () => {
  it('F1: SessionEndedError -> 409 with liveSessionId; MessageTooLargeError -> 413; retryable store errors -> 503 + Retry-After', async () => {
    const ended = deps({ appendMessages: async () => { throw new SessionEndedError('s1', 's2'); } }).d;
    const r = await run(ended, event('POST', '/sessions/s1/messages', { body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }) }));
    expect(r).toMatchObject({ status: 409, body: { error: { code: 'session_ended' }, liveSessionId: 's2' } });
    const big = deps({ appendMessages: async () => { throw new MessageTooLargeError(0, 500_000, 400_000); } }).d;
    expect((await run(big, event('POST', '/sessions/s1/messages', { body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }) }))).status).toBe(413);
    const busy = deps({ getSession: async () => { throw new StoreRetryableError('throttled'); } }).d;
    const b = await run(busy, event('GET', '/sessions/s1'));
    expect(b.status).toBe(503);
    expect(b.headers['retry-after']).toBe('2');
  });

  it('F1: 500 never leaks internals, and the log keeps them', async () => {
    const { d, logger } = deps({ getSession: async () => { throw new Error('ECONNREFUSED 10.0.0.7:8000 secret-table'); } });
    const r = await run(d, event('GET', '/sessions/s1'));
    expect(r).toEqual({ status: 500, headers: expect.any(Object), body: { error: { code: 'internal', message: 'internal error', requestId: 'req-1' } } });
    expect(JSON.stringify(r.body)).not.toContain('ECONNREFUSED');
    expect(logger.error).toHaveBeenCalledWith('unhandled error', expect.objectContaining({ error: expect.objectContaining({ message: expect.stringContaining('ECONNREFUSED') }) }));
  });

  it('F2: another tenant\'s or an unknown session is 404 and compaction is never attempted', async () => {
    const { d } = deps();
    const r = await run(d, event('POST', '/sessions/s9/compress', { body: '{}' }));
    expect(r).toMatchObject({ status: 404, body: { error: { code: 'not_found', message: 'session s9 not found' } } });
    expect(d.compact).not.toHaveBeenCalled();
  });

  it('F1: skipped/lease_unavailable -> 503 with Retry-After; locked, lease_lost, adopted, cancelled -> 200', async () => {
    const base = { sessionId: 's1', messages: [], warnings: [] };
    const unavailable = deps({}, async () => ({ ...base, outcome: 'skipped', reason: 'lease_unavailable' }));
    const r = await run(unavailable.d, event('POST', '/sessions/s1/compress', { body: '{"mode":"rotate"}' }));
    expect(r).toMatchObject({ status: 503, body: { outcome: 'skipped', reason: 'lease_unavailable', sessionId: 's1' } });
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(unavailable.d.compact).toHaveBeenCalledWith(expect.objectContaining({ ref: { tenantId: 't1', sessionId: 's1' }, mode: 'rotate', origin: 'manual', holder: 'http:req-1' }));
    for (const reason of ['locked', 'lease_lost'] as const) {
      const { d } = deps({}, async () => ({ ...base, outcome: 'skipped', reason, holder: 'other#1' }));
      const res = await run(d, event('POST', '/sessions/s1/compress', { body: '{}' }));
      expect(res).toMatchObject({ status: 200, body: { outcome: 'skipped', reason, sessionId: 's1' } });
      expect(res.headers?.['retry-after']).toBeUndefined();
    }
    const cancelled = deps({}, async () => ({ ...base, outcome: 'cancelled' }));
    expect(await run(cancelled.d, event('POST', '/sessions/s1/compress', { body: '{}' }))).toMatchObject({ status: 200, body: { outcome: 'cancelled' } });
    const { d } = deps({}, async () => ({ ...base, sessionId: 's2', outcome: 'skipped', reason: 'adopted' }));
    expect(await run(d, event('POST', '/sessions/s1/compress', { body: '{}' }))).toMatchObject({ status: 200, body: { outcome: 'skipped', reason: 'adopted', sessionId: 's2' } });
  });


  it('F1/F3: a failing after-turn publish is logged and never fails the append', async () => {
    const { d, logger, publisher } = deps();
    publisher.publish.mockRejectedValueOnce(new Error('queue down'));
    const r = await run(d, event('POST', '/sessions/s1/messages', { body: JSON.stringify({ messages: [{ role: 'user', content: 'hi', name: 'alice' }] }) }));
    expect(r).toMatchObject({ status: 200, body: { appended: 1 } });
    expect(publisher.publish).toHaveBeenCalledWith({ tenantId: 't1', sessionId: 's1', origin: 'turn' });
    expect(logger.warn).toHaveBeenCalledWith('after-turn publish failed', expect.objectContaining({ error: expect.stringContaining('queue down') }));
    // Client extras on messages are kept verbatim.
    expect(d.store.appendMessages).toHaveBeenCalledWith({ tenantId: 't1', sessionId: 's1' }, [{ role: 'user', content: 'hi', name: 'alice' }]);
  });

  it('F1: session views never expose fences or attempts', async () => {
    const { d } = deps();
    const r = await run(d, event('GET', '/sessions/s1'));
    expect(r.body.session).not.toHaveProperty('fence');
    expect(r.body.session).not.toHaveProperty('tenantId');
    expect(r.body.session).toMatchObject({ sessionId: 's1', parentSessionId: null, childSessionId: null, endedAt: null, messageCount: 0 });
  });
});
