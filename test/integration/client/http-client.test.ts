// lib/client over real HTTP (serverless-offline): every route, followRotation, a typed error
// for each status the service answers, and paging (SPEC F1, F2, A1, A3-A6, I1).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BadRequestError,
  CountMismatchError,
  CursorStaleError,
  IdempotencyKeyReusedError,
  LineageClient,
  NotFoundError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  SessionEndedError,
  UnauthorizedError,
  UnsupportedMediaTypeError,
  type Item,
} from '../../../lib/client/index.js';
import { freePort } from '../../../infra/local/processes.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';

let service: LocalService;
let apiKey: string;
let client: LineageClient;

beforeAll(async () => {
  // Only the compactions the tests ask for.
  service = await startLocalService({ afterTurn: false });
  apiKey = await service.createApiKey(`c-${randomUUID().slice(0, 8)}`);
  client = new LineageClient({ baseUrl: service.baseUrl, apiKey });
});

afterAll(async () => {
  await service?.stop();
});

const turn = (i: number): Item[] => [
  {
    type: 'message',
    role: 'user',
    content: [{ type: 'input_text', text: `Question ${i}: which replicas of the staging cluster failed the readiness probe?` }],
  },
  {
    type: 'function_call',
    callId: `call_${i}`,
    name: 'probe_status',
    arguments: JSON.stringify({ cluster: 'staging', turn: i }),
    status: 'completed',
  },
  {
    type: 'function_call_result',
    callId: `call_${i}`,
    name: 'probe_status',
    status: 'completed',
    output: { type: 'text', text: `replica-${i} failed: ${'timeout after 3s; '.repeat(10)}` },
  },
  {
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: `Replica ${i} failed its probe. ${'The fix is to raise the timeout. '.repeat(8)}` }],
  },
];

async function sessionWith(turns: number): Promise<string> {
  const s = await client.createSession({ format: 'responses', source: 'client-test' });
  if (turns > 0) await client.append(s.sessionId, Array.from({ length: turns }, (_, i) => turn(i)).flat());
  return s.sessionId;
}

describe('every route through the typed client', () => {
  it('F1/A1: create, get, append, list (round trip deep-equal), tail, lineage', async () => {
    const created = await client.createSession({ format: 'responses', source: 'client-test', metadata: { suite: 'client' } });
    expect(created).toMatchObject({
      format: 'responses',
      source: 'client-test',
      metadata: { suite: 'client' },
      messageCount: 0,
      parentSessionId: null,
      childSessionId: null,
    });
    const items = [...turn(0), { type: 'reasoning', summary: [{ type: 'summary_text', text: 'thinking' }], extra: { kept: true } }];
    const r = await client.append(created.sessionId, items);
    expect(r).toMatchObject({ sessionId: created.sessionId, appended: 5, replayed: false });
    expect(r.idempotencyKey).toMatch(/^lsc-/);
    expect(r.session.messageCount).toBe(5);
    expect((await client.getSession(created.sessionId)).messageCount).toBe(5);
    expect((await client.listMessages(created.sessionId)).messages).toEqual(items);
    expect(await client.tail(created.sessionId, 2)).toEqual(items.slice(-2));
    expect(await client.lineage(created.sessionId)).toMatchObject({ tip: created.sessionId, chain: [{ sessionId: created.sessionId }] });
  });

  it('A3: a create retried with the same Idempotency-Key makes one session', async () => {
    const key = `create-${randomUUID()}`;
    const a = await client.createSession({ format: 'responses' }, { idempotencyKey: key });
    const b = await client.createSession({ format: 'responses' }, { idempotencyKey: key });
    expect(b.sessionId).toBe(a.sessionId);
  });

  it('A3: an append sent twice with one key lands once and the second answer is the replayed first', async () => {
    const id = await sessionWith(0);
    const key = `append-${randomUUID()}`;
    const first = await client.append(id, turn(1), { idempotencyKey: key });
    const second = await client.append(id, turn(1), { idempotencyKey: key });
    expect(first.replayed).toBe(false);
    expect(second).toMatchObject({ replayed: true, appended: 4 });
    expect((await client.getSession(id)).messageCount).toBe(4);
  });

  it('A6: pop returns the removed item (null when empty); delete makes every route answer 404', async () => {
    const id = await sessionWith(1);
    const popped = await client.pop(id);
    expect(popped.removed).toEqual(turn(0)[3]);
    expect(popped.session.messageCount).toBe(3);
    const empty = await sessionWith(0);
    expect((await client.pop(empty)).removed).toBeNull();

    await client.deleteSession(id);
    await expect(client.getSession(id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.listMessages(id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.append(id, turn(2))).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.deleteSession(id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('I1/C10/C11: compress rotates to one child (lineage root → tip) and compacts in place', async () => {
    const id = await sessionWith(6);
    const rotated = await client.compress(id, { mode: 'rotate', keepLast: 4 });
    expect(rotated).toMatchObject({ outcome: 'compressed', mode: 'rotate', previousSessionId: id });
    const child = rotated.sessionId;
    expect(child).not.toBe(id);
    const lineage = await client.lineage(id);
    expect(lineage.chain.map((s) => s.sessionId)).toEqual([id, child]);
    expect(lineage.tip).toBe(child);
    expect(lineage.chain[0]).toMatchObject({ childSessionId: child, endReason: 'compression' });
    // A rotated parent stays readable.
    expect(await client.readAll(id)).toHaveLength(24);

    await client.append(child, [...turn(7), ...turn(8), ...turn(9)]);
    const inPlace = await client.compress(child, { mode: 'in_place', keepLast: 4 });
    expect(inPlace).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: child });
    expect(await client.readAll(child)).toEqual(inPlace.messages);
    // A repeated rotation is adopted: it names the one child (C4).
    expect(await client.compress(id, { mode: 'rotate' })).toMatchObject({ outcome: 'skipped', reason: 'adopted', sessionId: child });
  });
});

describe('followRotation', () => {
  it('F1: without it, an append to an ended session throws SessionEndedError naming the live session', async () => {
    const id = await sessionWith(6);
    const { sessionId: child } = await client.compress(id, { mode: 'rotate', keepLast: 2 });
    const err = await client.append(id, turn(9)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SessionEndedError);
    expect(err).toMatchObject({ status: 409, code: 'session_ended', liveSessionId: child });
    expect((err as SessionEndedError).idempotencyKey).toMatch(/^lsc-/);
  });

  it('F1/I4: with it, the append lands once on the live session', async () => {
    const id = await sessionWith(6);
    const { sessionId: child } = await client.compress(id, { mode: 'rotate', keepLast: 2 });
    const before = (await client.getSession(child)).messageCount;
    const r = await client.append(id, turn(9), { followRotation: true });
    expect(r).toMatchObject({ sessionId: child, followedFrom: id, appended: 4, replayed: false });
    expect((await client.getSession(child)).messageCount).toBe(before + 4);
    expect((await client.getSession(id)).messageCount).toBe(24);
    expect(await client.tail(child, 4)).toEqual(turn(9));
  });

  it('re-targets once: when the live session rotates again before the re-targeted append arrives, that 409 is returned', async () => {
    const id = await sessionWith(6);
    const { sessionId: child } = await client.compress(id, { mode: 'rotate', keepLast: 2 });
    let grandchild: string | undefined;
    // Between the first 409 and the re-targeted request, rotate the child too.
    const racing = new LineageClient({
      baseUrl: service.baseUrl,
      apiKey,
      fetch: async (req) => {
        const res = await fetch(req);
        if (res.status === 409 && grandchild === undefined) {
          await client.append(child, turn(20));
          grandchild = (await client.compress(child, { mode: 'rotate', keepLast: 2 })).sessionId;
        }
        return res;
      },
    });
    const err = await racing.append(id, turn(9), { followRotation: true }).catch((e: unknown) => e);
    expect(grandchild).toBeDefined();
    expect(err).toBeInstanceOf(SessionEndedError);
    expect((err as SessionEndedError).liveSessionId).toBe(grandchild);
    const lineage = await client.lineage(id);
    expect(lineage.chain.map((s) => s.sessionId)).toEqual([id, child, grandchild]);
    // Nothing of the refused append landed anywhere.
    for (const s of lineage.chain) {
      const texts = JSON.stringify(await client.readAll(s.sessionId));
      expect(texts).not.toContain('call_9');
    }
  });

  it('A4: an append with expectedCount is never re-targeted', async () => {
    const id = await sessionWith(6);
    await client.compress(id, { mode: 'rotate', keepLast: 2 });
    await expect(client.append(id, turn(9), { followRotation: true, expectedCount: 24 })).rejects.toBeInstanceOf(SessionEndedError);
  });
});

describe('typed errors for each status (F1)', () => {
  it('400 BadRequestError names the field', async () => {
    const id = await sessionWith(0);
    const err = await client.append(id, [{ type: 'message', role: 'robot', content: 'x' }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err).toMatchObject({ status: 400, code: 'invalid_request', field: 'messages[0].role' });
    expect((err as BadRequestError).body).toMatchObject({ error: { code: 'invalid_request', requestId: expect.any(String) } });
  });

  it('401 UnauthorizedError for an unknown key', async () => {
    const stranger = new LineageClient({ baseUrl: service.baseUrl, apiKey: 'slk_not-a-real-key' });
    await expect(stranger.getSession('abc')).rejects.toMatchObject({ name: 'UnauthorizedError', status: 401, code: 'unauthorized' });
    await expect(stranger.getSession('abc')).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it("404 NotFoundError for an unknown session and for another tenant's (F2)", async () => {
    await expect(client.getSession(randomUUID())).rejects.toMatchObject({ name: 'NotFoundError', status: 404, code: 'not_found' });
    const id = await sessionWith(1);
    const other = new LineageClient({ baseUrl: service.baseUrl, apiKey: await service.createApiKey(`o-${randomUUID().slice(0, 8)}`) });
    await expect(other.listMessages(id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.append(id, turn(1))).rejects.toBeInstanceOf(NotFoundError);
  });

  it('409 CountMismatchError carries the current count (A4)', async () => {
    const id = await sessionWith(1);
    const err = await client.append(id, turn(1), { expectedCount: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CountMismatchError);
    expect(err).toMatchObject({ status: 409, code: 'count_mismatch', messageCount: 4 });
    await expect(client.append(id, turn(1), { expectedCount: 4 })).resolves.toMatchObject({ appended: 4 });
  });

  it('409 CursorStaleError after an in-place compaction; readAll starts over and returns the new generation', async () => {
    const id = await sessionWith(8);
    const first = await client.listMessages(id, { limit: 10 });
    expect(first.nextCursor).not.toBeNull();
    const compacted = await client.compress(id, { mode: 'in_place', keepLast: 4 });
    expect(compacted.outcome).toBe('compressed');
    const err = await client.listMessages(id, { limit: 10, cursor: first.nextCursor! }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CursorStaleError);
    expect(err).toMatchObject({ status: 409, code: 'cursor_stale' });

    // readAll restarts when the generation changes under it.
    let compactedDuringRead = false;
    const restarting = new LineageClient({
      baseUrl: service.baseUrl,
      apiKey,
      fetch: async (req) => {
        const res = await fetch(req);
        if (!compactedDuringRead && req.method === 'GET' && new URL(req.url).searchParams.get('limit') === '3') {
          compactedDuringRead = true;
          await client.append(id, [...turn(30), ...turn(31), ...turn(32)]);
          expect((await client.compress(id, { mode: 'in_place', keepLast: 2 })).outcome).toBe('compressed');
        }
        return res;
      },
    });
    const all = await restarting.readAll(id, { limit: 3 });
    expect(compactedDuringRead).toBe(true);
    expect(all).toEqual(await client.readAll(id));
  });

  it('413 PayloadTooLargeError for a body over 5 MB (A7), each item under the 4 MB item limit', async () => {
    const id = await sessionWith(0);
    const big = (c: string) => ({ type: 'message', role: 'user', content: c.repeat(2_700_000) });
    const err = await client.append(id, [big('x'), big('y')]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err).toMatchObject({ status: 413, code: 'payload_too_large' });
  });

  it('415 UnsupportedMediaTypeError when a custom fetch sends another content type', async () => {
    const formEncoded = new LineageClient({
      baseUrl: service.baseUrl,
      apiKey,
      fetch: (req) => {
        const headers = new Headers(req.headers);
        headers.set('content-type', 'text/plain');
        return req.text().then((body) => fetch(req.url, { method: req.method, headers, body }));
      },
    });
    await expect(formEncoded.createSession({ format: 'responses' })).rejects.toMatchObject({
      name: 'UnsupportedMediaTypeError',
      status: 415,
    });
    await expect(formEncoded.createSession()).rejects.toBeInstanceOf(UnsupportedMediaTypeError);
  });

  it('422 IdempotencyKeyReusedError for the same key with another body (A3)', async () => {
    const id = await sessionWith(0);
    const key = `reuse-${randomUUID()}`;
    await client.append(id, turn(1), { idempotencyKey: key });
    const err = await client.append(id, turn(2), { idempotencyKey: key }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IdempotencyKeyReusedError);
    expect(err).toMatchObject({ status: 422, code: 'idempotency_key_reused', idempotencyKey: key });
    expect((await client.getSession(id)).messageCount).toBe(4);
  });

  it('503 ServiceUnavailableError with Retry-After when the lease backend is down (C2), after bounded retries', async () => {
    // A second service whose only Redis node is a port nobody listens on.
    const deadRedis = `redis://127.0.0.1:${await freePort()}`;
    const broken = await startLocalService({ afterTurn: false, skipBuild: true, env: { REDIS_URLS: deadRedis } });
    try {
      const key = await broken.createApiKey(`d-${randomUUID().slice(0, 8)}`);
      let attempts = 0;
      const c = new LineageClient({
        baseUrl: broken.baseUrl,
        apiKey: key,
        retry: { maxAttempts: 2 },
        fetch: (req) => {
          if (req.url.endsWith('/compress')) attempts++;
          return fetch(req);
        },
      });
      const s = await c.createSession({ format: 'responses' });
      await c.append(s.sessionId, [...turn(1), ...turn(2)]);
      const started = Date.now();
      const err = await c.compress(s.sessionId, { mode: 'rotate' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServiceUnavailableError);
      expect(err).toMatchObject({ status: 503, code: 'lease_unavailable', retryAfterMs: 2000 });
      // Retry-After was honoured between the two attempts.
      expect(attempts).toBe(2);
      expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    } finally {
      await broken.stop();
    }
  });
});

describe('paging (A5)', () => {
  it('A5: a 2,000-item session pages through nextCursor, every item once and in order, and tails past the size cap', async () => {
    const id = (await client.createSession({ format: 'responses' })).sessionId;
    // ~5 KB each: 1,000 of them are over one response's 4.5 MB cap, so pages are cut by size too.
    const items: Item[] = Array.from({ length: 2000 }, (_, i) => ({
      type: 'message',
      role: i % 2 ? 'assistant' : 'user',
      content: `item ${i} ${'p'.repeat(5000)}`,
    }));
    for (let i = 0; i < items.length; i += 98) await client.append(id, items.slice(i, i + 98));
    expect((await client.getSession(id)).messageCount).toBe(2000);

    const pages: Item[][] = [];
    for await (const page of client.pages(id, { limit: 1000 })) pages.push(page);
    expect(pages.length).toBeGreaterThanOrEqual(3);
    for (const p of pages) expect(p.length).toBeLessThan(1000);
    expect(pages.flat()).toEqual(items);

    const small: number[] = [];
    for await (const page of client.pages(id, { limit: 300 })) small.push(page.length);
    expect(small).toEqual([300, 300, 300, 300, 300, 300, 200]);
    expect(await client.readAll(id)).toEqual(items);

    // tail=1000 does not fit one response: the service returns fewer, newest last.
    const tail = await client.tail(id, 1000);
    expect(tail.length).toBeLessThan(1000);
    expect(tail).toEqual(items.slice(-tail.length));
  }, 120_000);
});
