// What the measured operations are made of: chat items of a realistic size, in-process HTTP
// requests through the service's own handler (lib/api/http-app.ts), and session seeding
// that bypasses HTTP (so it is never mistaken for a measured call).
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { ApiKeyStore } from '../../lib/api/api-keys.js';
import type { ApiDeps } from '../../lib/api/http-app.js';
import { handleHttpRequest } from '../../functions/adapters/api-gateway.js';
import type { Item } from '../../lib/items/types.js';
import { asIs } from '../../lib/lineage/prepare.js';
import type { DynamoLineageStore } from '../../lib/lineage/dynamo/store.js';
import type { SessionRef } from '../../lib/session-ref.js';
import type { Core } from '../../lib/runtime.js';

/** Characters of text per item: a short agent turn (~100 tokens); the stored item is measured, not assumed. */
export const ITEM_TEXT_CHARS = 400;
const WORDS = 'the agent read the file, ran the tests, and reported which checks failed and why they failed before the fix'.split(' ');

export function chatItems(n: number, from = 0): Item[] {
  return Array.from({ length: n }, (_, k) => {
    const i = from + k;
    let text = `turn ${i}:`;
    for (let w = i; text.length < ITEM_TEXT_CHARS; w++) text += ` ${WORDS[w % WORDS.length]}`;
    return { role: i % 2 === 0 ? 'user' : 'assistant', content: text.slice(0, ITEM_TEXT_CHARS) };
  });
}

export interface Http {
  (
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    opts?: { body?: unknown; query?: Record<string, string>; headers?: Record<string, string> },
  ): Promise<unknown>;
}

/** Requests as one tenant's API key, answered by the service's handler in this process; a non-2xx answer throws. */
export function httpAs(deps: ApiDeps, apiKey: string): Http {
  return async (method, path, opts = {}) => {
    const event = {
      rawPath: path,
      requestContext: { http: { method } },
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...opts.headers },
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
      ...(opts.query ? { queryStringParameters: opts.query } : {}),
    } as unknown as APIGatewayProxyEventV2;
    const res = await handleHttpRequest(event, deps, { requestId: randomUUID(), remainingTimeMs: () => 60_000 });
    if (res.statusCode === undefined || res.statusCode >= 300)
      throw new Error(`${method} ${path}: HTTP ${res.statusCode} ${res.body ?? ''}`);
    return res.body ? (JSON.parse(res.body) as unknown) : undefined;
  };
}

export async function apiKeyFor(core: Core, tenantId: string): Promise<string> {
  return (await new ApiKeyStore({ client: core.dynamo, tableName: core.config.tableName }).create(tenantId)).key;
}

/** A session holding `n` items, written through the store in appends of 98. */
export async function seeded(store: DynamoLineageStore, tenantId: string, n: number, from = 0): Promise<SessionRef> {
  const r = await store.createSession({ tenantId, source: 'capacity-bench' });
  if (r.replayed) throw new Error('unexpected replay');
  const ref = { tenantId, sessionId: r.session.sessionId };
  await appendSeeded(store, ref, n, from);
  return ref;
}

export async function appendSeeded(store: DynamoLineageStore, ref: SessionRef, n: number, from = 0): Promise<void> {
  const items = chatItems(n, from);
  for (let i = 0; i < items.length; i += 98) await store.appendItems(ref, { prepare: asIs(items.slice(i, i + 98)) });
}

export function expectOutcome(body: unknown, outcome: string, reason?: string): { sessionId: string } {
  const b = body as { outcome?: string; reason?: string; sessionId: string };
  if (b.outcome !== outcome || (reason && b.reason !== reason))
    throw new Error(`expected ${outcome}${reason ? `/${reason}` : ''}, got ${JSON.stringify(b).slice(0, 300)}`);
  return b;
}
