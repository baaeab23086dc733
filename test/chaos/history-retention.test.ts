// SPEC H3 and H5 end to end, in real time, against the service as `npm start` runs it
// (serverless-offline over the local stack): a conversation set to 60 s reads its in-place
// archives until then and reads them as absent after, with nothing but the clock changing
// (DynamoDB Local never runs TTL: the read filters); and an export round-trips through a real
// NDJSON request. In the slow suite for the real 60 s wait; the same rules with an injected clock
// are in test/integration/history/history.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalService, type LocalService } from '../support/local-service.js';

let service: LocalService;
let key: string;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  key = await service.createApiKey(`h3-${randomUUID().slice(0, 8)}`);
}, 180_000);
afterAll(() => service?.stop());

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${service.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json: any = res.headers.get('content-type')?.startsWith('application/json') && text ? JSON.parse(text) : undefined;
  return { status: res.status, json, text, headers: res.headers };
}

const say = (n: number) => Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i}` }));

async function compactInPlace(id: string): Promise<void> {
  const begun = await call('POST', `/conversations/${id}/compactions`, { mode: 'in_place' });
  expect(begun.status, begun.text).toBe(201);
  const { attempt } = begun.json;
  const done = await call(
    'POST',
    `/conversations/${id}/compactions/${attempt.attemptId}/commit`,
    { messages: [{ role: 'user', content: 'summary' }] },
    {
      'lease-token': attempt.leaseToken,
    },
  );
  expect(done.json.outcome, done.text).toBe('compressed');
}

async function history(id: string) {
  const r = await call('GET', `/conversations/${id}/history?limit=1000`);
  expect(r.status, r.text).toBe(200);
  return r.json.entries as { generation: number; summary?: boolean }[];
}

describe('history against the running service (SPEC H3, H5)', () => {
  it('H3: a conversation set to 60 s: archives readable, then absent after 60 s (real time, no error)', async () => {
    const id = `h3-${randomUUID().slice(0, 8)}`;
    expect((await call('PUT', `/conversations/${id}`, { retention: { archivedSeconds: 60 } })).status).toBe(201);
    expect((await call('POST', `/conversations/${id}/messages`, { messages: say(6) })).status).toBe(200);
    await compactInPlace(id);
    const started = Date.now();
    const before = await history(id);
    expect(before.filter((e) => e.generation === 0)).toHaveLength(6);
    expect(before.at(-1)).toMatchObject({ summary: true });
    await new Promise((r) => setTimeout(r, Math.max(0, started + 61_000 - Date.now())));
    const after = await history(id);
    expect(after.filter((e) => e.generation === 0)).toHaveLength(0);
    expect(after).toHaveLength(1);
  }, 150_000);

  it('H5: export (x-next-cursor pages) and import over real HTTP round-trip deep-equal but for the ids', async () => {
    const id = `h5-${randomUUID().slice(0, 8)}`;
    await call('PUT', `/conversations/${id}`, {});
    await call('POST', `/conversations/${id}/messages`, { messages: say(5) });
    await compactInPlace(id);
    const exportAll = async (c: string) => {
      let text = '';
      let cursor: string | null = null;
      do {
        const r = await call('GET', `/conversations/${c}/export?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(r.status).toBe(200);
        expect(r.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
        text += r.text;
        cursor = r.headers.get('x-next-cursor');
      } while (cursor);
      return text;
    };
    const original = await exportAll(id);
    const target = `h5-copy-${randomUUID().slice(0, 8)}`;
    const imported = await call('POST', `/conversations/${target}/import`, original, { 'content-type': 'application/x-ndjson' });
    expect(imported.status, imported.text).toBe(201);
    let copy = (await exportAll(target)).replaceAll(`"${target}"`, `"${id}"`);
    for (const [old, created] of Object.entries(imported.json.sessionIds as Record<string, string>)) copy = copy.replaceAll(created, old);
    const lines = (t: string) =>
      t
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as unknown);
    expect(lines(copy)).toEqual(lines(original));
  });
});
