// Conversations over real HTTP against serverless-offline and DynamoDB Local (SPEC K1-K3):
// one client-chosen id for a whole chain, acting on its live session through every rotation.
// Every response is checked against functions/openapi.json by the client.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Item } from '../../../lib/items/types.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';
import { apiClient, type Api } from './api-client.js';
import { readAll, turns } from './session-helpers.js';

let service: LocalService;
let api: Api;
let other: Api;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  api = apiClient(service.baseUrl, await service.createApiKey(`t-${randomUUID().slice(0, 8)}`));
  other = apiClient(service.baseUrl, await service.createApiKey(`t-${randomUUID().slice(0, 8)}`));
}, 240_000);

afterAll(async () => {
  await service?.stop();
});

const convId = (label: string) => `${label}:${randomUUID().slice(0, 8)}@agents.example-1.0`;

async function put(id: string, body: Record<string, unknown> = {}, client: Api = api) {
  const res = await client('PUT', `/conversations/${encodeURIComponent(id)}`, { body });
  expect([200, 201], JSON.stringify(res.body)).toContain(res.status);
  return res.body.conversation as { rootSessionId: string; liveSessionId: string; sessions: number };
}

/** Every session of the chain, root to tip, read from the session routes. */
async function chain(id: string): Promise<string[]> {
  const res = await api('GET', `/conversations/${encodeURIComponent(id)}/lineage`);
  expect(res.status).toBe(200);
  return (res.body.chain as { sessionId: string }[]).map((s) => s.sessionId);
}

function occurrences(items: Item[], text: string): number {
  return items.filter((i) => (i as { content?: unknown }).content === text).length;
}

describe('conversations over HTTP (K1-K3)', () => {
  it('K1: PUT creates once (201, then 200), concurrent PUTs make one, GET shows the live session; a format mismatch is 409', async () => {
    const id = convId('user_123');
    const path = `/conversations/${encodeURIComponent(id)}`;
    const first = await api('PUT', path, { body: { format: 'responses', source: 'e2e', metadata: { team: 'a' } } });
    expect(first.status).toBe(201);
    expect(first.body.conversation).toMatchObject({
      conversationId: id,
      format: 'responses',
      sessions: 1,
      messageCount: 0,
      metadata: { team: 'a' },
    });
    expect(first.body.conversation.liveSessionId).toBe(first.body.conversation.rootSessionId);
    expect((await api('PUT', path)).status).toBe(200);
    expect((await api('PUT', path, { body: { format: 'chat' } })).body).toMatchObject({ error: { code: 'format_mismatch' } });

    const racing = convId('race');
    const puts = await Promise.all(Array.from({ length: 12 }, () => api('PUT', `/conversations/${encodeURIComponent(racing)}`)));
    expect(puts.filter((r) => r.status === 201)).toHaveLength(1);
    expect(puts.filter((r) => r.status === 200)).toHaveLength(11);
    expect(new Set(puts.map((r) => r.body.conversation.rootSessionId)).size).toBe(1);

    const item = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] };
    const appended = await api('POST', `${path}/messages`, { body: { messages: [item] } });
    expect(appended.status).toBe(200);
    expect(appended.body.session).toMatchObject({ sessionId: first.body.conversation.rootSessionId, conversationId: id, messageCount: 1 });
    const got = await api('GET', path);
    expect(got.body.conversation).toMatchObject({ messageCount: 1, liveSessionId: first.body.conversation.rootSessionId });
    const patched = await api('PATCH', path, { body: { metadata: { team: 'b' } } });
    expect(patched.body.conversation.metadata).toEqual({ team: 'b' });
    const listed = await api('GET', '/conversations?limit=100');
    expect(listed.body.conversations[0].conversationId).toBe(id);
  });

  it('K1: a disallowed id is 400 naming conversationId; a POST /sessions chain is the conversation of its root id', async () => {
    for (const bad of ['a%20b', 'a%23b', 'x'.repeat(129), '%C3%A9t%C3%A9', 'a%2Fb']) {
      const res = await api('PUT', `/conversations/${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.field).toBe('conversationId');
    }
    const created = await api('POST', '/sessions', { body: {} });
    const root: string = created.body.session.sessionId;
    expect(created.body.session.conversationId).toBe(root);
    expect((await api('GET', `/conversations/${root}`)).body.conversation).toMatchObject({ rootSessionId: root, liveSessionId: root });
  });

  it("K3/F2: another tenant's conversation is 404 on every route, and that tenant can have its own with the same id", async () => {
    const id = convId('shared');
    const mine = await put(id);
    const p = `/conversations/${encodeURIComponent(id)}`;
    const msg = { body: { messages: [{ role: 'user', content: 'x' }] } };
    for (const [method, path, opts] of [
      ['GET', p, {}],
      ['PATCH', p, { body: { metadata: {} } }],
      ['DELETE', p, {}],
      ['GET', `${p}/messages`, {}],
      ['POST', `${p}/messages`, msg],
      ['DELETE', `${p}/messages/last`, {}],
      ['GET', `${p}/lineage`, {}],
      ['POST', `${p}/compress`, { body: { mode: 'rotate' } }],
    ] as const) {
      const res = await other(method, path, opts);
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    const theirs = await put(id, {}, other);
    expect(theirs.rootSessionId).not.toBe(mine.rootSessionId);
    expect((await api('GET', `/sessions/${theirs.rootSessionId}`)).status).toBe(404);
  });

  it('K2: appends (keyed and not) racing rotations through the conversation route: no 409, each acknowledged append in the chain exactly once', async () => {
    const id = convId('k2');
    const p = `/conversations/${encodeURIComponent(id)}`;
    await put(id);
    expect((await api('POST', `${p}/messages`, { body: { messages: turns(0, 4) } })).status).toBe(200);
    const acks: { text: string; sessionId: string; key?: string }[] = [];
    const keyed = new Map<string, { text: string; body: unknown }>();
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; i < 8; i++) {
        const text = `w${w}-m${i}`;
        const key = i % 2 === 0 ? `k-${w}-${i}-${randomUUID()}` : undefined;
        const body = { messages: [{ role: 'user', content: text }] };
        const headers = key ? { 'idempotency-key': key } : undefined;
        // A keyed request is sent twice at once, as a client retrying after a timeout would.
        const sent = key
          ? await Promise.all([api('POST', `${p}/messages`, { body, headers }), api('POST', `${p}/messages`, { body, headers })])
          : [await api('POST', `${p}/messages`, { body })];
        for (const res of sent) expect(res.status, JSON.stringify(res.body)).toBe(200);
        acks.push({ text, sessionId: sent[0]!.body.session.sessionId, ...(key ? { key } : {}) });
        if (key) keyed.set(key, { text, body });
      }
    });
    const rotations = (async () => {
      let done = 0;
      for (let i = 0; i < 12 && done < 4; i++) {
        const res = await api('POST', `${p}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        if (res.body.outcome === 'compressed') done++;
      }
      return done;
    })();
    const [rotated] = await Promise.all([rotations, ...writers]);
    expect(rotated).toBeGreaterThanOrEqual(1);

    // Keyed retries after the rotations replay, wherever the conversation lives now.
    for (const [key, { body }] of keyed) {
      const again = await api('POST', `${p}/messages`, { body, headers: { 'idempotency-key': key } });
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    }

    const ids = await chain(id);
    expect(ids.length).toBe(1 + rotated);
    const transcripts = new Map<string, Item[]>();
    for (const s of ids) transcripts.set(s, await readAll(api, s));
    const live = ids.at(-1)!;
    for (const a of acks) {
      const at = ids.indexOf(a.sessionId);
      expect(at, `${a.text} answered from ${a.sessionId}`).toBeGreaterThanOrEqual(0);
      // Landed once where it was acknowledged and never in an earlier session; a later one holds it at
      // most once (carried as the concurrent tail, I4, unless a later compaction summarized it).
      expect(occurrences(transcripts.get(a.sessionId)!, a.text), a.text).toBe(1);
      for (const earlier of ids.slice(0, at)) expect(occurrences(transcripts.get(earlier)!, a.text), a.text).toBe(0);
      for (const later of ids.slice(at + 1)) expect(occurrences(transcripts.get(later)!, a.text), a.text).toBeLessThanOrEqual(1);
    }
    const conv = (await api('GET', p)).body.conversation;
    expect(conv).toMatchObject({ liveSessionId: live, sessions: ids.length, messageCount: transcripts.get(live)!.length });
  });

  it('K2: after a rotation through the session routes, the conversation routes act on the child (never the ended parent)', async () => {
    const id = convId('stale');
    const p = `/conversations/${encodeURIComponent(id)}`;
    const { rootSessionId } = await put(id);
    await api('POST', `${p}/messages`, { body: { messages: turns(0, 3) } });
    // This container knows the root as the tip; the rotation goes through the session route.
    const rotated = await api('POST', `/sessions/${rootSessionId}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
    expect(rotated.body.outcome).toBe('compressed');
    const child: string = rotated.body.sessionId;
    const appended = await api('POST', `${p}/messages`, { body: { messages: [{ role: 'user', content: 'after' }] } });
    expect(appended.body.session.sessionId).toBe(child);
    const page = await api('GET', `${p}/messages?tail=1`);
    expect(page.body).toMatchObject({ session: { sessionId: child }, messages: [{ role: 'user', content: 'after' }] });
    const popped = await api('DELETE', `${p}/messages/last`);
    expect(popped.body).toMatchObject({ removed: { content: 'after' }, session: { sessionId: child } });
    expect((await api('GET', `${p}/lineage`)).body.tip).toBe(child);
    expect((await readAll(api, rootSessionId)).length).toBe(6);
  });

  it('K3: DELETE removes every session of the chain at once; the id can be created again', async () => {
    const id = convId('gone');
    const p = `/conversations/${encodeURIComponent(id)}`;
    await put(id);
    for (let i = 0; i < 2; i++) {
      await api('POST', `${p}/messages`, { body: { messages: turns(i * 3, 3) } });
      expect((await api('POST', `${p}/compress`, { body: { mode: 'rotate', keepLast: 2 } })).body.outcome).toBe('compressed');
    }
    const ids = await chain(id);
    expect(ids).toHaveLength(3);
    expect((await api('DELETE', p)).status).toBe(204);
    expect((await api('GET', p)).status).toBe(404);
    expect((await api('GET', `${p}/messages`)).status).toBe(404);
    expect((await api('POST', `${p}/messages`, { body: { messages: [{ role: 'user', content: 'x' }] } })).status).toBe(404);
    for (const s of ids) expect((await api('GET', `/sessions/${s}`)).status, s).toBe(404);
    expect((await api('DELETE', p)).status).toBe(404);
    const again = await api('PUT', p);
    expect(again.status).toBe(201);
    expect(ids).not.toContain(again.body.conversation.rootSessionId);
    expect(again.body.conversation).toMatchObject({ sessions: 1, messageCount: 0 });
  });

  it('K3: a PUT racing a DELETE leaves a whole live conversation or none', async () => {
    for (let round = 0; round < 6; round++) {
      const id = convId('race');
      const p = `/conversations/${encodeURIComponent(id)}`;
      await put(id);
      await api('POST', `${p}/messages`, { body: { messages: turns(0, 3) } });
      if (round % 2) await api('POST', `${p}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
      const before = await chain(id);
      const [del, created] = await Promise.all([api('DELETE', p), api('PUT', p), api('PUT', p)]);
      expect([204, 404]).toContain(del.status);
      expect([200, 201]).toContain(created.status);
      const now = await api('GET', p);
      if (now.status === 404) {
        for (const s of before) expect((await api('GET', `/sessions/${s}`)).status).toBe(404);
        continue;
      }
      const conv = now.body.conversation;
      const ids = await chain(id);
      expect(ids[0]).toBe(conv.rootSessionId);
      expect(ids.at(-1)).toBe(conv.liveSessionId);
      expect(ids).toHaveLength(conv.sessions);
      for (const s of ids) expect((await api('GET', `/sessions/${s}`)).status).toBe(200);
      // Either the old chain survived whole (DELETE lost) or a new one was made after it.
      if (del.status === 204) expect(before).not.toContain(conv.rootSessionId);
      else expect(ids).toEqual(before);
      expect((await api('POST', `${p}/messages`, { body: { messages: [{ role: 'user', content: 'ok' }] } })).status).toBe(200);
    }
  });

  it('H2: a branch from the middle carries its edge; a keyed retry makes one; a branch plus a rotation of the source is one child and one branch; errors are coded', async () => {
    const id = convId('src');
    const { liveSessionId } = await put(id);
    const p = `/conversations/${encodeURIComponent(id)}`;
    expect((await api('POST', `${p}/messages`, { body: { messages: turns(0, 6) } })).status).toBe(200);
    const source = await readAll(api, liveSessionId);
    const newId = convId('branch');
    const send = () =>
      api('POST', `${p}/branches`, { body: { conversationId: newId, fromSeq: 3 }, headers: { 'idempotency-key': `k-${newId}` } });
    const first = await send();
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const again = await send();
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect(again.body).toEqual(first.body);
    const edge = first.body.conversation.branchedFrom;
    expect(edge).toMatchObject({ conversationId: id, seq: 3 });
    const b = `/conversations/${encodeURIComponent(newId)}`;
    const branchRoot = first.body.conversation.rootSessionId as string;
    expect(await readAll(api, branchRoot)).toEqual(source.slice(0, 3));
    expect((await api('GET', b)).body.conversation.branchedFrom).toEqual(edge);
    expect((await api('GET', `${b}/lineage`)).body.branchedFrom).toEqual(edge);
    // The source rotates: one child; the branch is not one.
    const rotated = await api('POST', `${p}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
    expect(rotated.body.outcome).toBe('compressed');
    expect(await chain(id)).toEqual([edge.sessionId, rotated.body.sessionId]);
    expect(await readAll(api, branchRoot)).toEqual(source.slice(0, 3));
    const far = await api('POST', `${p}/branches`, { body: { conversationId: convId('far'), fromSeq: 999 } });
    expect([far.status, far.body.error.code, far.body.field]).toEqual([400, 'from_seq_out_of_range', 'fromSeq']);
    const taken = await api('POST', `${p}/branches`, { body: { conversationId: newId } });
    expect([taken.status, taken.body.error.code]).toEqual([409, 'conversation_exists']);
    // Deleting the source leaves the branch whole.
    expect((await api('DELETE', p)).status).toBe(204);
    expect(await readAll(api, branchRoot)).toEqual(source.slice(0, 3));
  });
});
