// Defect: GET /sessions/{id}/messages?tail=N silently returns fewer than N items when the
// latest N do not fit in one page (MAX_PAGE_BYTES), and says nextCursor: null ("at the end").
//
// readTail reads newest first and stops at maxBytes; the route always answers nextCursor null.
// A client (the Agents SDK's getItems(limit)) asking for the latest 14 of 14 items gets the
// newest 12 and no way to know that the 2 before them exist or to fetch them. Seen live:
// 16 items of ~330 KB, tail=20 answered 13 items, nextCursor null.
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { handleHttpRequest, type ApiDeps } from '../../lib/api/http-app.js';
import { asIs } from '../../lib/lineage/prepare.js';
import { dynamoClient, makeStore } from '../integration/lineage/support.js';

const KEY = 'slk_adversarial-tail';
const client = dynamoClient();
afterAll(() => client.destroy());

function get(path: string, query: Record<string, string>): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: new URLSearchParams(query).toString(),
    headers: { authorization: `Bearer ${KEY}` },
    queryStringParameters: query,
    requestContext: { http: { method: 'GET', path } },
  } as unknown as APIGatewayProxyEventV2;
}

describe('adversarial: tail=N and the page size cap (A5)', () => {
  it('A5: tail=N returns the latest N, or tells the client the answer was cut (never a silent, shorter "end")', async () => {
    const store = makeStore(client);
    const tenantId = `t-${randomUUID()}`;
    const created = await store.createSession({ tenantId, format: 'chat' });
    if (created.replayed) throw new Error('unexpected replay');
    const ref = { tenantId, sessionId: created.session.sessionId };
    // 14 items of ~330 KB: ~4.6 MB together, over the 4.5 MB page cap.
    const items = Array.from({ length: 14 }, (_, i) => ({ role: 'user', content: `${i}:${'y'.repeat(330_000)}` }));
    for (let i = 0; i < items.length; i += 2) await store.appendItems(ref, { prepare: asIs(items.slice(i, i + 2)) });

    const deps: ApiDeps = {
      store,
      apiKeys: { resolve: async (k) => (k === KEY ? tenantId : null) },
      compact: vi.fn(),
      publisher: { publish: vi.fn(async () => undefined) },
      logger: { info: vi.fn(), warn: vi.fn(), error: vi.fn() },
    };
    const r = await handleHttpRequest(get(`/sessions/${ref.sessionId}/messages`, { tail: '14' }), deps, { requestId: 'r1' });
    expect(r.statusCode).toBe(200);
    const body = JSON.parse(r.body!) as { messages: { content: string }[]; nextCursor: string | null };
    const got = body.messages.length;
    // Either every requested item, or a signal (a cursor) that there is more to fetch.
    expect({ got, nextCursor: got < 14 ? body.nextCursor : 'n/a' }).not.toEqual({ got, nextCursor: null });
    // Whatever was returned is the newest items, in order.
    expect(body.messages.map((m) => m.content.split(':')[0])).toEqual(items.slice(14 - got).map((m) => m.content.split(':')[0]));
  });
});
