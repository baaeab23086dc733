// Concurrent compaction over HTTP (SPEC I1, I2, I4, C1) and every error status (SPEC F1, F2).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalService, type LocalService } from '../../support/local-service.js';
import { apiClient, expectDocumented, type ApiResponse } from './api-client.js';

let service: LocalService;
let api: ReturnType<typeof apiClient>;
let other: ReturnType<typeof apiClient>;

beforeAll(async () => {
  // No after-turn compactions here: the only compactions are the ones the tests request.
  service = await startLocalService({ afterTurn: false });
  api = apiClient(service.baseUrl, await service.createApiKey(`a-${randomUUID().slice(0, 8)}`));
  other = apiClient(service.baseUrl, await service.createApiKey(`b-${randomUUID().slice(0, 8)}`));
});

afterAll(async () => {
  await service?.stop();
});

async function sessionWithTurns(turns: number): Promise<string> {
  const id: string = (await api('POST', '/sessions', { body: {} })).body.session.sessionId;
  const messages = Array.from({ length: turns }, (_, i) => [
    { role: 'user', content: `Turn ${i}: please summarise the deployment log for service ${i} and list the failing checks.` },
    { role: 'assistant', content: `Service ${i}: ${'the canary passed, the smoke test failed on the readiness probe; '.repeat(8)}` },
  ]).flat();
  const res = await api('POST', `/sessions/${id}/messages`, { body: { messages } });
  expect(res.status).toBe(200);
  return id;
}

describe('concurrent compaction over HTTP', () => {
  it('I1/I2/C1: 32 concurrent rotate requests give exactly one compressed, the rest skipped, one child; later appends land on the live session', async () => {
    const id = await sessionWithTurns(8);
    const results = await Promise.all(
      Array.from({ length: 32 }, () => api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } })),
    );
    for (const r of results) expectDocumented(r, 'POST', '/sessions/{id}/compress');
    const compressed = results.filter((r) => r.body.outcome === 'compressed');
    const skipped = results.filter((r) => r.body.outcome === 'skipped');
    expect(compressed).toHaveLength(1);
    expect(skipped).toHaveLength(31);
    const childId: string = compressed[0]!.body.sessionId;
    expect(childId).not.toBe(id);
    for (const r of skipped) {
      if (r.body.reason === 'adopted') {
        // Lost the race but came after the commit: told to continue on the one child (I2).
        expect(r.status).toBe(200);
        expect(r.body.sessionId).toBe(childId);
      } else {
        // Lost the lease race while the winner was still working: a definitive answer, not a 503.
        expect(r.body.reason).toBe('locked');
        expect(r.status).toBe(200);
        expect(r.body.sessionId).toBe(id);
      }
    }

    const lineage = await api('GET', `/sessions/${id}/lineage`);
    expect(lineage.body.chain.map((s: { sessionId: string }) => s.sessionId)).toEqual([id, childId]);
    const parent = await api('GET', `/sessions/${id}`);
    expect(parent.body.session.childSessionId).toBe(childId);

    // A second wave after the rotation compacts nothing more and creates no second child.
    const again = await Promise.all(Array.from({ length: 4 }, () => api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate' } })));
    for (const r of again) {
      expect(r.status).toBe(200);
      expect(r.body.outcome).toBe('skipped');
      // Whoever gets the lease adopts the one child (C4); the others lost the lease race.
      expect(r.body.sessionId).toBe(r.body.reason === 'adopted' ? childId : id);
      if (r.body.reason !== 'adopted') expect(r.body.reason).toBe('locked');
    }
    expect((await api('GET', `/sessions/${id}`)).body.session.childSessionId).toBe(childId);

    const late = await api('POST', `/sessions/${id}/messages`, { body: { messages: [{ role: 'user', content: 'after the race' }] } });
    expect(late.status).toBe(409);
    expect(late.body.liveSessionId).toBe(childId);
    const onLive = await api('POST', `/sessions/${late.body.liveSessionId}/messages`, { body: { messages: [{ role: 'user', content: 'after the race' }] } });
    expect(onLive.status).toBe(200);
    const tail = (await api('GET', `/sessions/${childId}/messages`)).body.messages.at(-1);
    expect(tail).toMatchObject({ role: 'user', content: 'after the race' });
  });
});

describe('errors say what was wrong', () => {
  const expectError = (res: ApiResponse, status: number, code: string) => {
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.message).toEqual(expect.any(String));
  };

  it('F1: 400 for invalid JSON, naming the problem', async () => {
    const res = await api('POST', '/sessions', { rawBody: '{"source": ', contentType: 'application/json' });
    expectError(res, 400, 'invalid_json');
    expectDocumented(res, 'POST', '/sessions');
    expect(res.body.error.message).toMatch(/not valid JSON/);
  });

  it('F1: 400 for a schema violation names the field', async () => {
    const id = await sessionWithTurns(1);
    const res = await api('POST', `/sessions/${id}/messages`, { body: { messages: [{ role: 'user', content: 'ok' }, { role: 'robot', content: 'x' }] } });
    expectError(res, 400, 'invalid_request');
    expectDocumented(res, 'POST', '/sessions/{id}/messages');
    expect(res.body.field).toBe('messages.1.role');
    expect(res.body.error.message).toContain('messages.1.role');
    const mode = await api('POST', `/sessions/${id}/compress`, { body: { mode: 'sideways' } });
    expectError(mode, 400, 'invalid_request');
    expect(mode.body.field).toBe('mode');
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
      expectDocumented(res, 'GET', '/sessions/{id}');
    }
    const res = await fetch(`${service.baseUrl}/sessions`, { method: 'POST', headers: { authorization: 'Basic Zm9vOmJhcg==' } });
    expect(res.status).toBe(401);
  });

  it('F1/F2: 404 for an unknown session and for another tenant\'s session, indistinguishably', async () => {
    const id = await sessionWithTurns(1);
    const unknown = await api('GET', `/sessions/${randomUUID()}`);
    expectError(unknown, 404, 'not_found');
    const foreign = await other('GET', `/sessions/${id}`);
    expectError(foreign, 404, 'not_found');
    expect(foreign.body.error.message).toBe(`session ${id} not found`);
    expectDocumented(foreign, 'GET', '/sessions/{id}');
  });

  it('F2: a second tenant can neither read nor change the first tenant\'s session', async () => {
    const id = await sessionWithTurns(4);
    const before = (await api('GET', `/sessions/${id}`)).body.session;
    const attempts = await Promise.all([
      other('GET', `/sessions/${id}`),
      other('GET', `/sessions/${id}/messages`),
      other('GET', `/sessions/${id}/lineage`),
      other('POST', `/sessions/${id}/messages`, { body: { messages: [{ role: 'user', content: 'intrusion' }] } }),
      other('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate' } }),
    ]);
    for (const r of attempts) expectError(r, 404, 'not_found');
    const after = (await api('GET', `/sessions/${id}`)).body.session;
    expect(after).toEqual(before);
    const messages = (await api('GET', `/sessions/${id}/messages`)).body.messages as { content: string }[];
    expect(messages.some((m) => m.content === 'intrusion')).toBe(false);
  });

  it('F1: 409 appending to an ended session names the live session', async () => {
    const id = await sessionWithTurns(6);
    const rotated = await api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
    expect(rotated.body.outcome).toBe('compressed');
    const res = await api('POST', `/sessions/${id}/messages`, { body: { messages: [{ role: 'user', content: 'x' }] } });
    expectError(res, 409, 'session_ended');
    expect(res.body.liveSessionId).toBe(rotated.body.sessionId);
    expect(res.body.error.message).toContain(rotated.body.sessionId);
  });

  it('F1: 413 for a body over 1 MiB', async () => {
    const id = await sessionWithTurns(1);
    const res = await api('POST', `/sessions/${id}/messages`, { body: { messages: [{ role: 'user', content: 'x'.repeat(1_100_000) }] } });
    expectError(res, 413, 'payload_too_large');
    expectDocumented(res, 'POST', '/sessions/{id}/messages');
    expect(res.body.error.message).toMatch(/limit is 1048576/);
  });

  it('F1: 415 for a POST body that is not application/json', async () => {
    const res = await api('POST', '/sessions', { rawBody: 'source=curl', contentType: 'application/x-www-form-urlencoded' });
    expectError(res, 415, 'unsupported_media_type');
    expectDocumented(res, 'POST', '/sessions');
    expect(res.body.error.message).toContain('application/x-www-form-urlencoded');
  });

  it('F1: unknown routes answer 404 and known paths with the wrong method 405, as JSON', async () => {
    expectError(await api('GET', '/nope'), 404, 'not_found');
    const res = await api('DELETE', `/sessions/${randomUUID()}`);
    expectError(res, 405, 'method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET');
  });
});
