// Defect: a metadata key named "__proto__" is silently dropped (201, metadata read back as {}).
//
// README: metadata is "stored as JSON text, so any key, the empty one included, round-trips".
// JSON.parse keeps "__proto__" as an own key, but createSessionBody's z.record(...) builds a new
// object by assignment, and `out["__proto__"] = v` sets the prototype instead of a key: the key
// vanishes from JSON.stringify and the session is created with different metadata than sent,
// with no 400. (Items are unaffected: validation hands back the client's own objects.)
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import type { CreateSessionInput, LineageStore, SessionRecord } from '../../../lib/lineage/types.js';

const KEY = 'slk_adversarial';

function post(body: string): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/sessions',
    rawQueryString: '',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    requestContext: { http: { method: 'POST', path: '/sessions' } },
    body,
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEventV2;
}

describe('metadata keys that are special to JavaScript (A1, README metadata; found by the adversarial pass)', () => {
  it.each([
    ['__proto__ at the top level', '{"metadata":{"__proto__":{"x":1},"a":1}}'],
    ['only __proto__', '{"metadata":{"__proto__":"v"}}'],
  ])('F1: %s is stored exactly as sent, or refused with a 400 (never silently dropped)', async (_name, text) => {
    let stored: CreateSessionInput | undefined;
    const store = {
      createSession: vi.fn(async (input: CreateSessionInput) => {
        stored = input;
        const session: SessionRecord = {
          tenantId: input.tenantId,
          sessionId: 's1',
          format: input.format ?? 'chat',
          createdAt: '2024-01-01T00:00:00.000Z',
          generation: 0,
          messageCount: 0,
          lastSeq: 0,
          tokenEstimate: 0,
          ...(input.metadata ? { metadata: input.metadata } : {}),
        };
        return { replayed: false as const, session };
      }),
    } as unknown as LineageStore;
    const deps: ApiDeps = {
      store,
      apiKeys: { resolve: async (k) => (k === KEY ? 't1' : null) },
      compact: vi.fn(),
      publisher: { publish: vi.fn(async () => undefined) },
      logger: { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() },
    };
    const r = await handleHttpRequest(post(text), deps, { requestId: 'r1' });
    if (r.statusCode === 400) return; // refusing it is an honest answer too
    expect(r.statusCode).toBe(201);
    const sent = (JSON.parse(text) as { metadata: unknown }).metadata;
    // What the store is asked to keep, and what the client is told it kept, are what it sent.
    expect(JSON.stringify(stored?.metadata)).toBe(JSON.stringify(sent));
    expect(JSON.stringify((JSON.parse(r.body!) as { session: { metadata: unknown } }).session.metadata)).toBe(JSON.stringify(sent));
  });
});
