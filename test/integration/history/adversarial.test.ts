// SPEC H3/H5 defects found by the adversarial pass against `npm start`, each pinned here:
// - an import's conversation line is held to the rules PUT/PATCH hold the same settings to (an
//   edited export could store a retention of 1 s or of a string, metadata of 300 KB, non-times);
// - a PUT or PATCH whose retention is over the tenant's limit answered 400 after it had created the
//   conversation or set its policies; an import's retention over the tenant's limit was stored.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { httpDeps } from '../../../lib/runtime.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';

const rt = testStackRuntime();
const tenantId = `impchk-${randomUUID().slice(0, 8)}`;
let key: string;
let deps: ApiDeps;

beforeAll(async () => {
  const core = await rt.core();
  key = (await new ApiKeyStore({ client: core.dynamo, tableName: process.env.TABLE_NAME! }).create(tenantId)).key;
  deps = await httpDeps(rt);
});
afterAll(async () => {
  await rt.close();
});

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const event = gatewayEvent(key, method, path, typeof body === 'string' ? undefined : body);
  if (typeof body === 'string') {
    event.headers = { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson', ...headers };
    event.body = body;
  }
  const r = await handleHttpRequest(event, deps, { requestId: randomUUID() });
  const text = r.body ?? '';
  let json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.statusCode ?? 0, body: json, text, headers: (r.headers ?? {}) as Record<string, string> };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Line = Record<string, any>;

async function exported(): Promise<Line[]> {
  const id = `src-${randomUUID().slice(0, 8)}`;
  expect((await call('PUT', `/conversations/${id}`, { format: 'chat' })).status).toBe(201);
  const messages = [
    { role: 'user', content: 'one' },
    { role: 'assistant', content: 'two' },
  ];
  expect((await call('POST', `/conversations/${id}/messages`, { messages })).status).toBe(200);
  const r = await call('GET', `/conversations/${id}/export`);
  expect(r.status).toBe(200);
  return r.text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

const ndjson = (lines: Line[]) => lines.map((l) => JSON.stringify(l)).join('\n');

describe('import checks (SPEC H5, H3)', () => {
  it("H5: an import's conversation line is held to PUT's bounds: retention (>= 60 s, whole), metadata (16 KiB), source, times; a bad one is a 400 naming it and nothing is created", async () => {
    const lines = await exported();
    const edits: [string, (l: Line[]) => void][] = [
      ['line 1.conversation.retention', (l) => (l[0]!.conversation.retention = { archivedSeconds: 1 })],
      ['line 1.conversation.retention', (l) => (l[0]!.conversation.retention = { archivedSeconds: 'x', endedSessionSeconds: -5 })],
      ['line 1.conversation.retention', (l) => (l[0]!.conversation.retention = { archivedSeconds: 1e15 })],
      ['line 1.conversation.retention', (l) => (l[0]!.conversation.retention = { keepForever: true })],
      ['line 1.conversation.metadata', (l) => (l[0]!.conversation.metadata = { big: 'x'.repeat(300_000) })],
      ['line 1.conversation.metadata', (l) => (l[0]!.conversation.metadata = [1, 2])],
      ['line 1.conversation.source', (l) => (l[0]!.conversation.source = 's'.repeat(201))],
      ['line 1.conversation.createdAt', (l) => (l[0]!.conversation.createdAt = 'yesterday')],
      ['line 1.conversation.activeAt', (l) => (l[0]!.conversation.activeAt = 'x')],
      ['line 1.lineage.chain[0]', (l) => (l[0]!.lineage.chain[0].createdAt = 'not a time')],
      ['line 2.compactedAt', (l) => (l[1]!.compactedAt = 'soon')],
    ];
    for (const [field, edit] of edits) {
      const copy = structuredClone(lines);
      edit(copy);
      const target = `imp-${randomUUID().slice(0, 8)}`;
      const r = await call('POST', `/conversations/${target}/import`, ndjson(copy));
      expect(r.status, `${field}: ${r.text}`).toBe(400);
      expect(r.body).toMatchObject({ error: { code: 'invalid_request' }, field });
      expect((await call('GET', `/conversations/${target}`)).status).toBe(404);
    }
    // Within the bounds, the same settings import as sent.
    const ok = structuredClone(lines);
    ok[0]!.conversation.retention = { archivedSeconds: 60, endedSessionSeconds: 3600 };
    ok[0]!.conversation.metadata = { team: 'support' };
    const target = `imp-${randomUUID().slice(0, 8)}`;
    expect((await call('POST', `/conversations/${target}/import`, ndjson(ok))).status).toBe(201);
    const view = await call('GET', `/conversations/${target}`);
    expect(view.body.conversation).toMatchObject({
      retention: { archivedSeconds: 60, endedSessionSeconds: 3600 },
      metadata: { team: 'support' },
    });
  });

  it("H3: a PUT whose retention is over the tenant's limit creates nothing; a PATCH with a policy and such a retention changes nothing (400 retention_over_tenant_limit first)", async () => {
    const id = `ret-${randomUUID().slice(0, 8)}`;
    const over = { archivedSeconds: 3_000_000_000 / 1000 };
    const put = await call('PUT', `/conversations/${id}`, { format: 'chat', turns: 'required', retention: over });
    expect(put.status, put.text).toBe(400);
    expect(put.body).toMatchObject({ error: { code: 'retention_over_tenant_limit' }, field: 'retention.archivedSeconds' });
    expect((await call('GET', `/conversations/${id}`)).status).toBe(404);
    expect((await call('PUT', `/conversations/${id}`, { format: 'chat' })).status).toBe(201);
    const patch = await call('PATCH', `/conversations/${id}`, { turns: 'required', compaction: 'agent', retention: over });
    expect(patch.status, patch.text).toBe(400);
    expect(patch.body).toMatchObject({ error: { code: 'retention_over_tenant_limit' } });
    const view = await call('GET', `/conversations/${id}`);
    expect(view.body.conversation).toMatchObject({ turns: 'optional', compaction: 'service' });
    expect(view.body.conversation.retention).toBeUndefined();
  });

  it("H3/H5: an import whose retention is over the tenant's limit is refused as a PUT is (400 retention_over_tenant_limit) and creates nothing", async () => {
    const lines = await exported();
    lines[0]!.conversation.retention = { archivedSeconds: 3_000_000 };
    const target = `imp-${randomUUID().slice(0, 8)}`;
    const r = await call('POST', `/conversations/${target}/import`, ndjson(lines));
    expect(r.status, r.text).toBe(400);
    expect(r.body).toMatchObject({ error: { code: 'retention_over_tenant_limit' } });
    expect((await call('GET', `/conversations/${target}`)).status).toBe(404);
  });
});
