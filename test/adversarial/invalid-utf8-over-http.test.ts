// Defect (low): over HTTP, a body whose bytes are not UTF-8 is accepted (200) and stored with
// U+FFFD in place of the bad bytes, although README says "bytes that are not UTF-8: 400".
//
// The check (lib/api/json-body.ts, a fatal TextDecoder) only sees bytes when the event body is
// base64; an application/json body reaches the handler as a string, already decoded with
// replacement characters by the HTTP layer (serverless-offline here; API Gateway HTTP API
// passes text content types as text too), so the handler cannot tell. The unit test feeds
// base64 events only, which is why it passes. What the client sent and what it reads back differ.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalService, type LocalService } from '../support/local-service.js';
import { Api, raw } from './tools/http.js';

let service: LocalService;
let api: Api;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  api = new Api(service.baseUrl, await service.createApiKey(`utf8-${randomUUID().slice(0, 8)}`));
});
afterAll(async () => {
  await service?.stop();
});

describe('adversarial: bytes that are not UTF-8 (README bodies, A1)', () => {
  it.each([
    ['0xff 0xfe', [0xff, 0xfe]],
    ['overlong "/" (0xc0 0xaf)', [0xc0, 0xaf]],
    ['a UTF-8-encoded lone surrogate (0xed 0xb0 0x80)', [0xed, 0xb0, 0x80]],
  ])('F1: an append whose body holds %s is a 400, and nothing is appended', async (_name, bytes) => {
    const id = (await api.create({})).json.session.sessionId as string;
    const body = Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"a'), Buffer.from(bytes), Buffer.from('b"}]}')]);
    const r = await raw(service.baseUrl, {
      method: 'POST',
      path: `/sessions/${id}/messages`,
      headers: { authorization: `Bearer ${api.key}`, 'content-type': 'application/json' },
      body,
    });
    expect({ status: r.status, code: r.json?.error?.code }).toEqual({ status: 400, code: 'invalid_json' });
    expect((await api.get(id)).json.session.messageCount).toBe(0);
  });
});
