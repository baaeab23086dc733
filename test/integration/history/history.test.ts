// SPEC H1 (history), H3 (retention), H5 (export): through the real composition root and handler,
// against DynamoDB Local. Compactions are held attempts, so their output is exactly what we send.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { httpDeps } from '../../../lib/runtime.js';
import { RoundTrips } from '../../support/round-trips.js';
import { begin, commitInput } from '../lineage/support.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';

const rt = testStackRuntime();
const tenantId = `hist-${randomUUID().slice(0, 8)}`;
let key: string;
let deps: ApiDeps;
let trips: RoundTrips;
let dynamo: Awaited<ReturnType<typeof rt.core>>['dynamo'];

beforeAll(async () => {
  const core = await rt.core();
  dynamo = core.dynamo;
  key = (await new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! }).create(tenantId)).key;
  deps = await httpDeps(rt);
  trips = new RoundTrips().watchDynamo(dynamo);
});
afterAll(async () => {
  trips.restore();
  await rt.close();
});

interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
  headers: Record<string, string>;
}

async function call(
  method: string,
  path: string,
  opts: { body?: unknown; token?: string; query?: Record<string, string> } = {},
): Promise<Answer> {
  const event = gatewayEvent(key, method, path, opts.body, opts.query);
  if (opts.token !== undefined) event.headers['lease-token'] = opts.token;
  const r = await handleHttpRequest(event, deps, { requestId: randomUUID() });
  const text = r.body ?? '';
  const json = String(r.headers?.['content-type'] ?? '').startsWith('application/json') && text ? JSON.parse(text) : undefined;
  return { status: r.statusCode ?? 0, body: json, text, headers: (r.headers ?? {}) as Record<string, string> };
}

const msg = (role: string, content: string) => ({ role, content });
const turns = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => msg(i % 2 ? 'assistant' : 'user', `${prefix} ${i}`));

async function append(id: string, messages: unknown[]): Promise<void> {
  expect((await call('POST', `/conversations/${id}/messages`, { body: { messages } })).status).toBe(200);
}

/** A held compaction of the conversation's live session, replacing everything with `summary`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function compact(id: string, mode: 'in_place' | 'rotate', summary: unknown[]): Promise<any> {
  const begun = await call('POST', `/conversations/${id}/compactions`, { body: { mode } });
  expect(begun.status, JSON.stringify(begun.body)).toBe(201);
  const { attempt } = begun.body;
  const done = await call('POST', `/conversations/${id}/compactions/${attempt.attemptId}/commit`, {
    token: attempt.leaseToken,
    body: { messages: summary },
  });
  expect(done.body.outcome, JSON.stringify(done.body)).toBe('compressed');
  return done.body;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function allHistory(path: string, limit?: number): Promise<any[]> {
  const entries = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 1000; pages++) {
    const r = await call('GET', path, { query: { ...(limit ? { limit: String(limit) } : {}), ...(cursor ? { cursor } : {}) } });
    expect(r.status, r.text).toBe(200);
    entries.push(...r.body.entries);
    if (r.body.nextCursor === null) return entries;
    cursor = r.body.nextCursor;
  }
  throw new Error('history never ended');
}

const sumA = [msg('user', 'the human asked'), msg('assistant', 'SUMMARY A')];
const sumB = [msg('user', 'the human asked again'), msg('assistant', 'SUMMARY B')];

/** root: 6 items, compacted in place (sumA) + 2 more, then rotated (sumB) + 3 more in the child. */
async function story() {
  const id = `hist-${randomUUID().slice(0, 8)}`;
  const put = await call('PUT', `/conversations/${id}`, { body: {} });
  const root = put.body.conversation.liveSessionId as string;
  await append(id, turns('first', 6));
  await compact(id, 'in_place', sumA);
  await append(id, turns('second', 2));
  const rotated = await compact(id, 'rotate', sumB);
  const child = rotated.sessionId as string;
  await append(id, turns('third', 3));
  return { id, root, child };
}

describe('history (SPEC H1)', () => {
  it('H1: after an in-place compaction and a rotation, history returns every item the conversation held, in order, summaries flagged, compactedAt on replaced items', async () => {
    const { id, root, child } = await story();
    const entries = await allHistory(`/conversations/${id}/history`);
    const lineage = (await call('GET', `/conversations/${id}/lineage`)).body;
    const rotatedAt = lineage.chain[0].endedAt as string;
    expect(entries.map((e) => [e.sessionId, e.seq, e.summary ?? false, e.item.content])).toEqual([
      ...turns('first', 6).map((m, i) => [root, i + 1, false, m.content]),
      [root, 1, true, 'the human asked'],
      [root, 2, true, 'SUMMARY A'],
      [root, 3, false, 'second 0'],
      [root, 4, false, 'second 1'],
      [child, 1, true, 'the human asked again'],
      [child, 2, true, 'SUMMARY B'],
      ...turns('third', 3).map((m, i) => [child, i + 3, false, m.content]),
    ]);
    // Generation 0 was replaced in place (its commit's time), the next by the rotation; the child's are live.
    const g0 = entries.filter((e) => e.sessionId === root && e.generation === 0);
    expect(g0).toHaveLength(6);
    expect(new Set(g0.map((e) => e.compactedAt)).size).toBe(1);
    expect(Date.parse(g0[0].compactedAt)).toBeLessThanOrEqual(Date.parse(rotatedAt));
    expect(entries.filter((e) => e.sessionId === root && e.generation !== 0).every((e) => e.compactedAt === rotatedAt)).toBe(true);
    expect(entries.filter((e) => e.sessionId === child).every((e) => e.compactedAt === undefined)).toBe(true);
    // Paged small, the same entries in the same order (pages never cross a session).
    expect(await allHistory(`/conversations/${id}/history`, 3)).toEqual(entries);
    expect(await allHistory(`/conversations/${id}/history`, 1)).toEqual(entries);
    // The session twin: up to and including that session.
    expect(await allHistory(`/sessions/${root}/history`, 4)).toEqual(entries.filter((e) => e.sessionId === root));
    expect(await allHistory(`/sessions/${child}/history`)).toEqual(entries);
  });

  it('H1: a page costs at most one Query plus the records (counted per page)', async () => {
    const { id } = await story();
    let cursor: string | undefined;
    const perPage: string[][] = [];
    do {
      const { result } = await trips.during(() =>
        handleHttpRequest(
          gatewayEvent(key, 'GET', `/conversations/${id}/history`, undefined, { limit: '4', ...(cursor ? { cursor } : {}) }),
          deps,
          {
            requestId: randomUUID(),
          },
        ),
      );
      perPage.push(trips.calls.filter((c) => c.kind === 'dynamodb').map((c) => c.op));
      trips.calls.length = 0;
      cursor = JSON.parse(result.body ?? '{}').nextCursor ?? undefined;
    } while (cursor);
    expect(perPage.length).toBeGreaterThan(2);
    for (const [i, ops] of perPage.entries()) {
      expect(ops.filter((op) => op === 'QueryCommand').length, ops.join()).toBeLessThanOrEqual(1);
      // The first page reads the conversation (and tenant setting) then the root's record; later pages one BatchGet.
      expect(ops.length, ops.join()).toBeLessThanOrEqual(i === 0 ? 3 : 2);
    }
  });

  it('H1: every item once, in order, while appends land between pages', async () => {
    const id = `hist-${randomUUID().slice(0, 8)}`;
    await call('PUT', `/conversations/${id}`, { body: {} });
    await append(id, turns('a', 20));
    await compact(id, 'in_place', sumA);
    await append(id, turns('b', 10));
    const seen = [];
    let cursor: string | undefined;
    let n = 0;
    do {
      const r = await call('GET', `/conversations/${id}/history`, { query: { limit: '4', ...(cursor ? { cursor } : {}) } });
      seen.push(...r.body.entries);
      cursor = r.body.nextCursor ?? undefined;
      if (cursor) await append(id, [msg('user', `late ${n++}`)]);
    } while (cursor);
    const contents = seen.map((e) => e.item.content);
    expect(contents).toEqual([
      ...turns('a', 20).map((m) => m.content),
      'the human asked',
      'SUMMARY A',
      ...turns('b', 10).map((m) => m.content),
      ...Array.from({ length: n }, (_, i) => `late ${i}`),
    ]);
  });

  it('H1: unknown conversation 404, a cursor of another conversation 400, limit rules as messages', async () => {
    const a = await story();
    const b = await story();
    expect((await call('GET', `/conversations/nope-${a.id}/history`)).status).toBe(404);
    const page = await call('GET', `/conversations/${a.id}/history`, { query: { limit: '2' } });
    const foreign = await call('GET', `/conversations/${b.id}/history`, { query: { cursor: page.body.nextCursor } });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.code).toBe('invalid_request');
    for (const limit of ['0', '1001', 'x'])
      expect((await call('GET', `/conversations/${a.id}/history`, { query: { limit } })).status).toBe(400);
  });
});

describe('retention (SPEC H3)', () => {
  /** The same table read at another time (reads filter on expiry: DynamoDB Local's TTL never deletes). */
  const later = (seconds: number) =>
    new DynamoLineageStore({ client: dynamo, tableName: process.env.TABLE_NAME!, now: () => Date.now() + seconds * 1000 });

  it('H3: a conversation set to 60 s: its in-place archives read until then, and are absent (not an error) after', async () => {
    const { id, root } = await story();
    const set = await call('PATCH', `/conversations/${id}`, { body: { retention: { archivedSeconds: 60 } } });
    expect(set.status, set.text).toBe(200);
    expect(set.body.conversation.retention).toEqual({ archivedSeconds: 60 });
    const now = await later(0).readHistory(tenantId, id, { limit: 100, maxBytes: 1e6 });
    expect(now.entries.filter((e) => e.sessionId === root && e.generation === 0)).toHaveLength(6);
    const after = await later(61).readHistory(tenantId, id, { limit: 100, maxBytes: 1e6 });
    // Generation 0 (replaced in place) is gone; the rotated parent's last generation stays (no endedSessionSeconds).
    expect(after.entries.filter((e) => e.sessionId === root).map((e) => e.item)).toEqual([...sumA, ...turns('second', 2)]);
  });

  it('H3: endedSessionSeconds: a rotated parent reads as absent after it; the child stays', async () => {
    const { id, root, child } = await story();
    expect((await call('PATCH', `/conversations/${id}`, { body: { retention: { endedSessionSeconds: 120 } } })).status).toBe(200);
    const read = async (s: number) => {
      const out = [];
      let from;
      for (;;) {
        const p = await later(s).readHistory(tenantId, id, { limit: 100, maxBytes: 1e6, ...(from ? { from } : {}) });
        out.push(...p.entries);
        if (!p.next) return out;
        from = p.next;
      }
    };
    expect((await read(60)).some((e) => e.sessionId === root)).toBe(true);
    const after = await read(121);
    expect(after.every((e) => e.sessionId === child)).toBe(true);
    expect(after).toHaveLength(5);
  });

  it("H3: each setting at least 60 s and bounded by the tenant's (400 retention_over_tenant_limit); a shortened tenant setting applies at once", async () => {
    const id = `hist-${randomUUID().slice(0, 8)}`;
    const bad = await call('PUT', `/conversations/${id}`, { body: { retention: { archivedSeconds: 59 } } });
    expect(bad.status).toBe(400);
    expect((await call('PUT', `/conversations/${id}`, { body: { retention: { archivedSeconds: 8 * 24 * 3600 } } })).body.error.code).toBe(
      'retention_over_tenant_limit',
    );
    // Only on a conversation that exists: no record appears for an unknown id (the update's condition).
    const unknown = `hist-none-${randomUUID().slice(0, 8)}`;
    expect((await call('PATCH', `/conversations/${unknown}`, { body: { retention: { archivedSeconds: 60 } } })).status).toBe(404);
    expect((await call('GET', `/conversations/${unknown}`)).status).toBe(404);
    expect(await later(0).getConversation(tenantId, unknown)).toBeNull();
    const tenant = `hist-t-${randomUUID().slice(0, 8)}`;
    const store = later(0);
    await store.setTenantRetention(tenant, { archivedSeconds: 3600, endedSessionSeconds: 7200 });
    expect(await store.tenantRetention(tenant)).toEqual({ archivedSeconds: 3600, endedSessionSeconds: 7200 });
    await store.ensureConversation({ tenantId: tenant, conversationId: 'c1' }, false);
    await expect(store.setConversationRetention(tenant, 'c1', { endedSessionSeconds: 7201 })).rejects.toMatchObject({
      code: 'retention_over_tenant_limit',
    });
    expect((await store.setConversationRetention(tenant, 'c1', { archivedSeconds: 3600 })).retention).toEqual({ archivedSeconds: 3600 });
    // An archive of c1, then the tenant shortens its limit under c1's own setting: the shorter one applies at once.
    const root = { tenantId: tenant, sessionId: (await store.getConversation(tenant, 'c1'))!.rootSessionId };
    await store.appendItems(root, { prepare: () => ({ items: [msg('user', 'a'), msg('assistant', 'b')], tokenEstimates: [1, 1] }) });
    await store.commitInPlace(root, await begin(store, root), commitInput([msg('user', 'sum')]));
    const archived = async (seconds: number) =>
      (await later(seconds).readHistory(tenant, 'c1', { limit: 10, maxBytes: 1e6 })).entries.filter((e) => e.compactedAt).length;
    expect(await archived(700)).toBe(2);
    await store.setTenantRetention(tenant, { archivedSeconds: 600 });
    expect(await archived(700)).toBe(0);
    expect(await archived(0)).toBe(2);
  });
});

describe('export (SPEC H5)', () => {
  it('H5: GET .../export is NDJSON: the conversation and its lineage first, then one line per history entry; paged by the x-next-cursor header', async () => {
    const { id } = await story();
    const history = await allHistory(`/conversations/${id}/history`);
    const lines: any[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = await call('GET', `/conversations/${id}/export`, { query: { limit: '3', ...(cursor ? { cursor } : {}) } });
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toMatch(/^application\/x-ndjson/);
      lines.push(
        ...r.text
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l)),
      );
      cursor = r.headers['x-next-cursor'];
      pages++;
    } while (cursor);
    expect(pages).toBeGreaterThan(2);
    const conv = (await call('GET', `/conversations/${id}`)).body.conversation;
    const lineage = (await call('GET', `/conversations/${id}/lineage`)).body;
    expect(lines[0]).toEqual({ type: 'conversation', conversation: conv, lineage });
    expect(lines.slice(1)).toEqual(history.map((e) => ({ type: 'item', ...e })));
  });
});

async function exportAll(id: string, limit = '4'): Promise<string> {
  let text = '';
  let cursor: string | undefined;
  do {
    const r = await call('GET', `/conversations/${id}/export`, { query: { limit, ...(cursor ? { cursor } : {}) } });
    expect(r.status, r.text).toBe(200);
    text += r.text;
    cursor = r.headers['x-next-cursor'];
  } while (cursor);
  return text;
}

async function importInto(id: string, ndjson: string, key?: string): Promise<Answer> {
  const event = gatewayEvent(key ?? 'unused', 'POST', `/conversations/${id}/import`);
  event.headers = {
    authorization: `Bearer ${keyOf()}`,
    'content-type': 'application/x-ndjson',
    ...(key ? { 'idempotency-key': key } : {}),
  };
  event.body = ndjson;
  const r = await handleHttpRequest(event, deps, { requestId: randomUUID() });
  const text = r.body ?? '';
  return {
    status: r.statusCode ?? 0,
    body: text ? JSON.parse(text) : undefined,
    text,
    headers: (r.headers ?? {}) as Record<string, string>,
  };
}
const keyOf = () => key;

/** The import's export with its ids put back to the original's. */
function withOriginalIds(text: string, from: string, to: string, sessionIds: Record<string, string>): string {
  let out = text.replaceAll(`"${to}"`, `"${from}"`);
  for (const [old, created] of Object.entries(sessionIds)) out = out.replaceAll(created, old);
  return out;
}

describe('import (SPEC H5)', () => {
  it('H5: export → import → export deep-equals the original but for the ids, after an in-place compaction and a rotation (summaries, compactedAt, generations, policies, metadata, retention)', async () => {
    const { id } = await story();
    expect(
      (
        await call('PATCH', `/conversations/${id}`, {
          body: { metadata: { user: 'u1', n: 2 }, compaction: 'agent', retention: { archivedSeconds: 3600 } },
        })
      ).status,
    ).toBe(200);
    await compact(id, 'in_place', sumA); // the child gets a replaced generation too
    await append(id, turns('fourth', 2));
    const original = await exportAll(id);
    const target = `imported-${randomUUID().slice(0, 8)}`;
    const r = await importInto(target, original);
    expect(r.status, r.text).toBe(201);
    expect(r.body).toMatchObject({ conversationId: target, sessions: 2, items: original.split('\n').filter(Boolean).length - 1 });
    const copy = await exportAll(target, '3');
    const lines = (t: string) =>
      t
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as unknown);
    expect(lines(withOriginalIds(copy, id, target, r.body.sessionIds))).toEqual(lines(original));
    // The new ids are new: no session of the original is reused.
    expect(Object.values(r.body.sessionIds as Record<string, string>).some((s) => original.includes(s))).toBe(false);
    // It is a live conversation: appends and compactions go on.
    await append(target, turns('after', 1));
    await compact(target, 'rotate', sumB);
    expect((await call('GET', `/conversations/${target}`)).body.conversation.sessions).toBe(3);
  });

  it('H5: the target must be new (409); an Idempotency-Key makes a retried import one import (replayed), another body under it 422; bad lines 400 naming the line', async () => {
    const { id } = await story();
    const original = await exportAll(id);
    expect((await importInto(id, original)).status).toBe(409);
    const target = `imported-${randomUUID().slice(0, 8)}`;
    const ikey = randomUUID();
    const first = await importInto(target, original, ikey);
    expect(first.status, first.text).toBe(201);
    const again = await importInto(target, original, ikey);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await importInto(target, original.split('\n').slice(0, 3).join('\n'), ikey)).status).toBe(422);
    expect((await importInto(target, original, randomUUID())).status).toBe(409);
    const broken = original.replace('"type":"item"', '"type":"nope"');
    const refused = await importInto(`imported-${randomUUID().slice(0, 8)}`, broken);
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/^line 2/);
    const shuffled = original.split('\n').filter(Boolean);
    [shuffled[2], shuffled[3]] = [shuffled[3]!, shuffled[2]!];
    expect((await importInto(`imported-${randomUUID().slice(0, 8)}`, shuffled.join('\n'))).status).toBe(400);
  });
});
