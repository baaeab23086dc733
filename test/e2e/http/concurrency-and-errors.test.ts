// Concurrent compaction over HTTP (SPEC I1, I2, I4, C1), live-tip answers over a chain (C4, F1,
// issue 11 item 5), every error status (F1), tenant isolation (F2) and the issue 11 input
// defects (metadata numbers and caps, non-UTF-8 charsets).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalService, type LocalService } from '../../support/local-service.js';
import { apiClient, type Api, type ApiResponse } from './api-client.js';
import { appendAll, chainIds, createSession, readAll, turns } from './session-helpers.js';

let service: LocalService;
let api: Api;
let other: Api;

beforeAll(async () => {
  // No after-turn compactions here: the only compactions are the ones the tests request.
  service = await startLocalService({ afterTurn: false });
  api = apiClient(service.baseUrl, await service.createApiKey(`a-${randomUUID().slice(0, 8)}`));
  other = apiClient(service.baseUrl, await service.createApiKey(`b-${randomUUID().slice(0, 8)}`));
});

afterAll(async () => {
  await service?.stop();
});

async function sessionWithTurns(n: number): Promise<string> {
  const id = await createSession(api);
  await appendAll(api, id, turns(0, n));
  return id;
}

const expectError = (res: ApiResponse, status: number, code: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.message).toEqual(expect.any(String));
};

describe('concurrent compaction over HTTP', () => {
  it('I1/I2/C1: 32 concurrent rotate requests give exactly one compressed, the rest skipped, one child; later appends land on the live session', async () => {
    const id = await sessionWithTurns(8);
    const results = await Promise.all(
      Array.from({ length: 32 }, () => api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } })),
    );
    const compressed = results.filter((r) => r.body.outcome === 'compressed');
    expect(compressed).toHaveLength(1);
    const childId: string = compressed[0]!.body.sessionId;
    expect(childId).not.toBe(id);
    for (const r of results.filter((x) => x !== compressed[0])) {
      expect(r.status).toBe(200);
      expect(r.body.outcome).toBe('skipped');
      // C1: a loser is answered from the lease decision alone, without the transcript.
      expect(r.body.messages).toBeUndefined();
      // Lost the lease race (the session as asked), or came after the commit: told to continue on the one child (I2).
      expect([r.body.reason, r.body.sessionId]).toEqual(r.body.reason === 'adopted' ? ['adopted', childId] : ['locked', id]);
    }

    expect(chainIds((await api('GET', `/sessions/${id}/lineage`)).body)).toEqual([id, childId]);
    expect((await api('GET', `/sessions/${id}`)).body.session.childSessionId).toBe(childId);

    // A second wave after the rotation compacts nothing more and creates no second child.
    const again = await Promise.all(Array.from({ length: 4 }, () => api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate' } })));
    for (const r of again) {
      expect([r.status, r.body.outcome]).toEqual([200, 'skipped']);
      expect([r.body.reason, r.body.sessionId]).toEqual(r.body.reason === 'adopted' ? ['adopted', childId] : ['locked', id]);
    }
    expect((await api('GET', `/sessions/${id}`)).body.session.childSessionId).toBe(childId);

    const late = await api('POST', `/sessions/${id}/messages`, { body: { messages: [{ role: 'user', content: 'after the race' }] } });
    expect(late.status).toBe(409);
    expect(late.body.liveSessionId).toBe(childId);
    expect(
      (
        await api('POST', `/sessions/${late.body.liveSessionId}/messages`, {
          body: { messages: [{ role: 'user', content: 'after the race' }] },
        })
      ).status,
    ).toBe(200);
    expect((await readAll(api, childId)).at(-1)).toEqual({ role: 'user', content: 'after the race' });
  });
});

describe('answers name the live tip of the chain (C4, F1, issue 11 item 5)', () => {
  it('F1/C4/C13: over a chain P→X→Y→Z, appends, pops and compress requests on P, X or Y name Z; with Z deleted, compress is 409 chain_deleted', async () => {
    const chain = [await sessionWithTurns(6)];
    for (let i = 0; i < 3; i++) {
      const res = await api('POST', `/sessions/${chain.at(-1)}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
      expect(res.body.outcome).toBe('compressed');
      chain.push(res.body.sessionId as string);
      await appendAll(api, res.body.sessionId, turns(10 * (i + 1), 4));
    }
    const [p, x, y, z] = chain as [string, string, string, string];
    expect(chainIds((await api('GET', `/sessions/${p}/lineage`)).body)).toEqual(chain);

    for (const ended of [p, x, y]) {
      const append = await api('POST', `/sessions/${ended}/messages`, { body: { messages: [{ role: 'user', content: 'late' }] } });
      expectError(append, 409, 'session_ended');
      expect(append.body.liveSessionId).toBe(z);
      expect(append.body.error.message).toContain(z);
      const pop = await api('DELETE', `/sessions/${ended}/messages/last`);
      expect([pop.status, pop.body.liveSessionId]).toEqual([409, z]);
    }
    for (const mode of ['rotate', 'in_place']) {
      const adopted = await api('POST', `/sessions/${p}/compress`, { body: { mode } });
      expect(adopted.body).toEqual({ outcome: 'skipped', reason: 'adopted', sessionId: z, warnings: [] });
    }
    const review = await api('POST', `/sessions/${p}/compress`, { body: { origin: 'review', mode: 'rotate' } });
    expect(review.body).toEqual({ outcome: 'disabled', reason: 'review_origin', sessionId: z, warnings: [] });
    // On the live session itself, it names itself.
    expect((await api('POST', `/sessions/${z}/compress`, { body: { origin: 'review' } })).body.sessionId).toBe(z);
    expect((await api('GET', `/sessions/${z}`)).body.session.childSessionId).toBeNull();

    // C4 C13 K3 (issues 22, 28): deleting the live tip deletes the whole chain; no answer names an ended session.
    expect((await api('DELETE', `/sessions/${z}`)).status).toBe(204);
    expectError(await api('GET', `/sessions/${p}/lineage`), 404, 'not_found');
    for (const body of [{ mode: 'rotate' }, { mode: 'in_place' }, { origin: 'review', mode: 'rotate' }]) {
      expectError(await api('POST', `/sessions/${p}/compress`, { body }), 404, 'not_found');
    }
  });
});

describe('errors say what was wrong', () => {
  it('F1: 400 for invalid JSON, naming the problem', async () => {
    const res = await api('POST', '/sessions', { rawBody: '{"source": ', contentType: 'application/json' });
    expectError(res, 400, 'invalid_json');
    expect(res.body.error.message).toMatch(/not valid JSON/);
  });

  it('F1: 400 for a schema violation names the field', async () => {
    const id = await sessionWithTurns(1);
    const res = await api('POST', `/sessions/${id}/messages`, {
      body: {
        messages: [
          { role: 'user', content: 'ok' },
          { role: 'robot', content: 'x' },
        ],
      },
    });
    expectError(res, 400, 'invalid_request');
    expect(res.body.field).toBe('messages[1].role');
    expect(res.body.error.message).toContain('messages[1].role');
    const mode = await api('POST', `/sessions/${id}/compress`, { body: { mode: 'sideways' } });
    expectError(mode, 400, 'invalid_request');
    expect(mode.body.field).toBe('mode');
    const format = await api('POST', '/sessions', { body: { format: 'xml' } });
    expect([format.status, format.body.field]).toEqual([400, 'format']);
  });

  it('F1: 400 for a malformed session id in the path', async () => {
    const res = await api('GET', `/sessions/${encodeURIComponent('bad id!')}`);
    expectError(res, 400, 'invalid_request');
    expect(res.body.field).toBe('id');
  });

  it('F2: 401 without a key, with a malformed header, and with an unknown key', async () => {
    for (const key of [null, 'slk_not-a-real-key']) {
      const res = await api('GET', '/sessions/abc', { key });
      expectError(res, 401, 'unauthorized');
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
    const basic = await api('POST', '/sessions', { key: null, headers: { authorization: 'Basic Zm9vOmJhcg==' } });
    expectError(basic, 401, 'unauthorized');
  });

  it("F1/F2: 404 for an unknown session and for another tenant's session, indistinguishably", async () => {
    const id = await sessionWithTurns(1);
    const unknown = await api('GET', `/sessions/${randomUUID()}`);
    expectError(unknown, 404, 'not_found');
    const foreign = await other('GET', `/sessions/${id}`);
    expectError(foreign, 404, 'not_found');
    expect(foreign.body.error.message).toBe(`session ${id} not found`);
    expectError(await api('POST', `/sessions/${randomUUID()}/compress`, { body: { mode: 'rotate' } }), 404, 'not_found');
  });

  it("F2: a second tenant can neither read, page, change, compact, pop nor delete the first tenant's session", async () => {
    const id = await sessionWithTurns(4);
    const before = (await api('GET', `/sessions/${id}`)).body.session;
    const cursor = (await api('GET', `/sessions/${id}/messages?limit=2`)).body.nextCursor as string;
    const attempts = await Promise.all([
      other('GET', `/sessions/${id}`),
      other('GET', `/sessions/${id}/messages`),
      other('GET', `/sessions/${id}/messages?tail=2`),
      other('GET', `/sessions/${id}/lineage`),
      other('POST', `/sessions/${id}/messages`, { body: { messages: [{ role: 'user', content: 'intrusion' }] } }),
      other('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate' } }),
      other('DELETE', `/sessions/${id}/messages/last`),
      other('DELETE', `/sessions/${id}`),
    ]);
    for (const r of attempts) expectError(r, 404, 'not_found');
    expect((await api('GET', `/sessions/${id}`)).body.session).toEqual(before);
    expect(await readAll(api, id)).toEqual(turns(0, 4));
    // A cursor is bound to its tenant and session: refused before any read, the same as for an unknown session.
    const theirs = await createSession(other);
    for (const target of [id, theirs, randomUUID()]) {
      const res = await other('GET', `/sessions/${target}/messages?cursor=${cursor}`);
      expect([res.status, res.body.field, res.body.error.message]).toEqual([
        400,
        'cursor',
        'cursor: cursor is not one this API issued for this session',
      ]);
    }
  });

  it('F1/A7: 413 for a body over 5 MB', async () => {
    const id = await sessionWithTurns(1);
    const res = await api('POST', `/sessions/${id}/messages`, { body: { messages: [{ role: 'user', content: 'x'.repeat(5_300_000) }] } });
    expectError(res, 413, 'payload_too_large');
    expect(res.body.error.message).toMatch(/limit is 5242880/);
    expect(await readAll(api, id)).toEqual(turns(0, 1));
  });

  it('F1/issue 11: 415 for a body that is not application/json, or not UTF-8 by its charset', async () => {
    const form = await api('POST', '/sessions', { rawBody: 'source=curl', contentType: 'application/x-www-form-urlencoded' });
    expectError(form, 415, 'unsupported_media_type');
    expect(form.body.error.message).toContain('application/x-www-form-urlencoded');
    const id = await sessionWithTurns(1);
    const body = JSON.stringify({ messages: [{ role: 'user', content: 'caf\u00e9' }] });
    for (const charset of ['latin1', 'ISO-8859-1', 'utf-16']) {
      const res = await api('POST', `/sessions/${id}/messages`, { rawBody: body, contentType: `application/json; charset=${charset}` });
      expectError(res, 415, 'unsupported_media_type');
      expect(res.body.error.message).toContain(charset);
    }
    expect(await readAll(api, id)).toEqual(turns(0, 1));
    const utf8 = await api('POST', `/sessions/${id}/messages`, { rawBody: body, contentType: 'application/json; charset=UTF-8' });
    expect(utf8.status).toBe(200);
    expect((await readAll(api, id)).at(-1)).toEqual({ role: 'user', content: 'caf\u00e9' });
  });

  it('F1: unknown routes answer 404 and known paths with another method 405 with Allow, as JSON', async () => {
    expectError(await api('GET', '/nope'), 404, 'not_found');
    const res = await api('PUT', `/sessions/${randomUUID()}`, { body: {} });
    expectError(res, 405, 'method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET, DELETE');
  });
});

describe('metadata the store can hold exactly (issue 11 item 1)', () => {
  const create = (rawMetadata: string) =>
    api('POST', '/sessions', { rawBody: `{"metadata":${rawMetadata}}`, contentType: 'application/json' });

  it('issue 11: numbers a double cannot carry exactly are refused with a 400 naming the field, never stored changed', async () => {
    for (const [raw, field] of [
      ['{"n":12345678901234567890}', 'metadata.n'],
      ['{"a":{"b":[1,1e400]}}', 'metadata.a.b[1]'],
      ['{"tiny":1e-400}', 'metadata.tiny'],
      ['{"n":-9007199254740993}', 'metadata.n'],
    ] as const) {
      const res = await create(raw);
      expectError(res, 400, 'invalid_request');
      expect(res.body.field, raw).toBe(field);
      expect(res.body.error.message).toContain(field);
    }
  });

  it('issue 11: exact numbers, large and tiny, an empty key and unicode round-trip unchanged', async () => {
    const raw = '{"max":9007199254740991,"e21":1e21,"tiny":1e-130,"neg":-1.5e-300,"f":0.1,"":1,"k":{"日本":[true,null,"x"]}}';
    const res = await create(raw);
    expect(res.status).toBe(201);
    const expected = JSON.parse(raw) as Record<string, unknown>;
    expect(res.body.session.metadata).toEqual(expected);
    expect((await api('GET', `/sessions/${res.body.session.sessionId}`)).body.session.metadata).toEqual(expected);
  });

  it('issue 11: metadata caps: 16 KB, depth 16, keys of 256 characters, each a 400 naming the field; at the caps it is stored', async () => {
    const nested = (depth: number): unknown => (depth === 1 ? { leaf: 1 } : { d: nested(depth - 1) });
    const atCaps = { s: 'x'.repeat(16_000), deep: nested(15), ['k'.repeat(256)]: 1 };
    const ok = await api('POST', '/sessions', { body: { metadata: atCaps } });
    expect(ok.status, JSON.stringify(ok.body).slice(0, 300)).toBe(201);
    expect((await api('GET', `/sessions/${ok.body.session.sessionId}`)).body.session.metadata).toEqual(atCaps);
    // The metadata survives a compaction onto the child (the record with an attempt and a child must still fit).
    await appendAll(api, ok.body.session.sessionId, turns(0, 6));
    const rotated = await api('POST', `/sessions/${ok.body.session.sessionId}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
    expect(rotated.body.outcome).toBe('compressed');
    expect((await api('GET', `/sessions/${rotated.body.sessionId}`)).body.session.metadata).toEqual(atCaps);

    const over: [unknown, string][] = [
      [{ s: 'x'.repeat(16_400) }, 'metadata'],
      [{ deep: nested(16) }, `metadata.deep${'.d'.repeat(15)}`],
      [{ ['k'.repeat(257)]: 1 }, 'metadata'],
    ];
    for (const [metadata, field] of over) {
      const res = await api('POST', '/sessions', { body: { metadata } });
      expectError(res, 400, 'invalid_request');
      expect(res.body.field).toBe(field);
    }
  });
});
