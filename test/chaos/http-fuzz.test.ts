// Bad-input fuzz of the HTTP API through the real local service (serverless-offline running
// the bundled handlers against the chaos stack). Every generated request is invalid by
// construction: malformed JSON, wrong types, unknown fields and roles, huge strings, unicode
// edge cases, path traversal and odd characters in ids, bad credentials. Proves: always a 4xx
// with a JSON {error: {code, message}}, never a 5xx (F1, F2), and nothing is written.
import { randomUUID } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDynamoClient } from '../../lib/clients.js';
import { recordCounts, scaled } from '../support/chaos/counts.js';
import { startLocalService, type LocalService } from '../support/local-service.js';

let svc: LocalService;
let key: string;
let sessionId: string;
const tenant = `chaos-fuzz-${randomUUID()}`;
const counts = { inputsTried: 0, inputViolations: 0 };
/** Requests the local gateway (serverless-offline/hapi) refused before our handler ran. */
let gatewayRejected = 0;
const statuses: Record<number, number> = {};

interface BadRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  auth?: string | null;
}

async function send(r: BadRequest): Promise<{ status: number; body: unknown; text: string }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const auth = r.auth === undefined ? `Bearer ${key}` : r.auth;
  if (auth !== null) headers.authorization = auth;
  const res = await fetch(svc.baseUrl + r.path, {
    method: r.method,
    headers,
    ...(r.body !== undefined ? { body: r.body } : {}),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, body, text };
}

beforeAll(async () => {
  svc = await startLocalService({ afterTurn: false });
  key = await svc.createApiKey(tenant);
  const created = await send({ method: 'POST', path: '/sessions', body: JSON.stringify({ source: 'fuzz' }) });
  expect(created.status).toBe(201);
  sessionId = (created.body as { session: { sessionId: string } }).session.sessionId;
  const appended = await send({ method: 'POST', path: `/sessions/${sessionId}/messages`, body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }) });
  expect(appended.status).toBe(200);
}, 240_000);

afterAll(async () => {
  recordCounts('http-fuzz', counts);
  console.log(`http fuzz: ${counts.inputsTried} inputs, statuses ${JSON.stringify(statuses)}, ${gatewayRejected} refused by the gateway emulator`);
  await svc?.stop();
});

const validRoles = new Set(['system', 'user', 'assistant', 'tool']);
const weirdString = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('\u0000', '\ud800', '\udfff', '\u202e', '\ufeff', '👩‍👩‍👧‍👦', 'e\u0301', '\u2028\u2029', '%00', '%2e%2e%2f'),
);
const notAString = fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 2 }));
const badRole = weirdString.filter((r) => !validRoles.has(r));
const hugeString = fc.integer({ min: 300_000, max: 600_000 }).map((n) => 'x'.repeat(n));

const badMessage = fc.oneof(
  fc.record({ role: badRole, content: fc.string({ maxLength: 20 }) }),
  fc.record({ role: fc.constantFrom('user', 'assistant'), content: notAString }),
  fc.record({ role: hugeString, content: fc.constant('x') }),
  fc.record({ role: notAString, content: weirdString }),
  fc.record({ content: weirdString }),
  fc.record({ role: fc.constant('user'), content: fc.constant('ok'), synthetic: weirdString }),
);
const appendBody = fc.oneof(
  fc.record({ messages: fc.array(badMessage, { minLength: 1, maxLength: 3 }) }).map((b) => JSON.stringify(b)),
  // One good message next to a bad one: the whole request is refused, nothing partial is written.
  fc.tuple(badMessage).map(([bad]) => JSON.stringify({ messages: [{ role: 'user', content: 'fine' }, bad] })),
  fc.constant(JSON.stringify({ messages: [] })),
  notAString.map((m) => JSON.stringify({ messages: m })),
  fc.record({ messages: fc.constant([{ role: 'user', content: 'x' }]), extra: weirdString }).map((b) => JSON.stringify(b)),
  fc.constant(JSON.stringify({ messages: [{ role: 'user', content: 'y'.repeat(450_000) }] })),
);
const malformedJson = fc.oneof(
  // An empty body is "no body" (every create/compress field is optional), not malformed.
  fc.string({ maxLength: 50 }).filter((s) => {
    if (s.trim() === '') return false;
    try {
      JSON.parse(s);
      return false;
    } catch {
      return true;
    }
  }),
  fc.constantFrom('{', '{"messages": [', '{"a":1,}', "{'role':'user'}", '\ud800', 'null', '[]', '"str"', '42', 'true'),
);
const createBody = fc.oneof(
  fc.record({ source: fc.oneof(notAString, fc.constant(''), fc.constant('s'.repeat(201))) }).map((b) => JSON.stringify(b)),
  fc.record({ unknownField: weirdString }).map((b) => JSON.stringify(b)),
  fc.record({ metadata: fc.oneof(fc.integer(), fc.string(), fc.array(fc.integer())) }).map((b) => JSON.stringify(b)),
);
const compressBody = fc.oneof(
  fc.record({ mode: weirdString.filter((m) => m !== 'in_place' && m !== 'rotate') }).map((b) => JSON.stringify(b)),
  fc.record({ origin: notAString }).map((b) => JSON.stringify(b)),
  fc.record({ keepLast: fc.oneof(fc.double({ noInteger: true }), fc.integer({ min: 1001 }), fc.integer({ max: -1 }), fc.string()) }).map((b) => JSON.stringify(b)),
);
/** Percent-encodes a segment; lone surrogates (not encodable) become raw invalid UTF-8 escapes. */
function encodePathSegment(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return [...s].map((ch) => (/[\ud800-\udfff]/.test(ch) ? '%ED%A0%80' : encodeURIComponent(ch))).join('');
  }
}
const badId = fc.oneof(
  fc.constantFrom('..', '../..', '..%2F..%2Fetc%2Fpasswd', '%2e%2e', '.%2F', 'a%2Fb', '%00', '%F0%9F%92%A9', '%C0%AE%C0%AE', '-leading-dash', '_x', 'x'.repeat(129)),
  weirdString.filter((s) => s.length > 0).map(encodePathSegment).filter((s) => !/^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/.test(s)),
);

const request: fc.Arbitrary<BadRequest> = fc.oneof(
  appendBody.map((body) => ({ method: 'POST' as const, path: `/sessions/${sessionId}/messages`, body })),
  malformedJson.map((body) => ({ method: 'POST' as const, path: `/sessions/${sessionId}/messages`, body })),
  malformedJson.map((body) => ({ method: 'POST' as const, path: '/sessions', body })),
  createBody.map((body) => ({ method: 'POST' as const, path: '/sessions', body })),
  compressBody.map((body) => ({ method: 'POST' as const, path: `/sessions/${sessionId}/compress`, body })),
  fc.tuple(badId, fc.constantFrom('', '/messages', '/lineage')).map(([id, tail]) => ({ method: 'GET' as const, path: `/sessions/${id}${tail}` })),
  badId.map((id) => ({ method: 'POST' as const, path: `/sessions/${id}/messages`, body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }) })),
  fc.constantFrom(null, '', 'Bearer', 'Bearer ', 'Basic abc', 'Bearer not-a-key', `Bearer ${'k'.repeat(5000)}`).map((auth) => ({
    method: 'POST' as const,
    path: `/sessions/${sessionId}/messages`,
    body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }),
    auth,
  })),
);

async function tenantItemCount(): Promise<number> {
  const ddb = createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT, maxAttempts: 3 });
  try {
    let n = 0;
    let start: Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> | undefined;
    do {
      const page = await ddb.send(
        new ScanCommand({
          TableName: process.env.TABLE_NAME,
          FilterExpression: 'begins_with(pk, :p)',
          ExpressionAttributeValues: { ':p': { S: `T#${tenant}#` } },
          Select: 'COUNT',
          ExclusiveStartKey: start,
        }),
      );
      n += page.Count ?? 0;
      start = page.LastEvaluatedKey;
    } while (start);
    return n;
  } finally {
    ddb.destroy();
  }
}

/**
 * A path with invalid UTF-8 percent-encoding (e.g. %C0%AE) is refused by the HTTP layer in front
 * of the handler (hapi's Boom shape locally; API Gateway answers it itself in AWS), so our error
 * shape cannot apply. Only that case is exempt from the shape check, never from "4xx".
 */
function isGatewayRefusal(path: string, body: unknown): boolean {
  let badEncoding = false;
  try {
    decodeURIComponent(path);
  } catch {
    badEncoding = true;
  }
  const b = body as { statusCode?: unknown; error?: unknown } | undefined;
  return badEncoding && typeof b?.statusCode === 'number' && typeof b.error === 'string';
}

describe('HTTP API bad-input fuzz', () => {
  it('F1 F2: every invalid request gets a 4xx JSON error, never a 5xx, and writes nothing', async () => {
    const before = await tenantItemCount();
    expect(before).toBeGreaterThan(0); // the scan sees this tenant's session, so "nothing written" can fail
    // Every generated request is tried; violations are collected so one run lists them all.
    const violations: string[] = [];
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        counts.inputsTried++;
        const res = await send(r);
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        const what = `${r.method} ${r.path.slice(0, 120)} body=${(r.body ?? '').slice(0, 60)} -> ${res.status} ${res.text.slice(0, 200)}`;
        if (res.status < 400 || res.status >= 500) return void violations.push(`not a 4xx: ${what}`);
        if (isGatewayRefusal(r.path, res.body)) return void gatewayRejected++;
        const err = (res.body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
        if (typeof err?.code !== 'string' || typeof err.message !== 'string') violations.push(`not a JSON error: ${what}`);
      }),
      {
        numRuns: scaled(120),
        // Always tried first: a JSON body that is not an object (the literal null included) is a wrong type.
        examples: ['null', '[]', '42', '"x"', 'true'].flatMap((body): [BadRequest][] => [
          [{ method: 'POST' as const, path: '/sessions', body }],
          [{ method: 'POST' as const, path: `/sessions/${sessionId}/compress`, body }],
        ]),
      },
    );
    counts.inputViolations = violations.length;
    expect(violations).toEqual([]);
    expect(await tenantItemCount()).toBe(before);
    const session = await send({ method: 'GET', path: `/sessions/${sessionId}/messages` });
    expect(session.status).toBe(200);
    expect((session.body as { messages: unknown[] }).messages).toEqual([{ role: 'user', content: 'hi' }]);
  });
});
