// SPEC T1-T6 through the real handler on DynamoDB Local and Redis: the turn routes as an agent
// calls them (begin, heartbeat, end, status), the four strategies, fenced appends after a
// supersede, an end and an expiry, enqueue order, rollback, the required policy, a turn across a
// rotation, and tokens and tenants checked.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { httpDeps } from '../../../lib/runtime.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';

const rt = testStackRuntime();
let key: string;
let otherKey: string;
let deps: ApiDeps;

beforeAll(async () => {
  const { dynamo } = await rt.core();
  const keys = new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! });
  key = (await keys.create(`turns-${randomUUID().slice(0, 8)}`)).key;
  otherKey = (await keys.create(`turns-other-${randomUUID().slice(0, 8)}`)).key;
  deps = await httpDeps(rt);
});
afterAll(() => rt.close());

interface Answer {
  status: number;
  body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  headers: Record<string, unknown>;
}

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, as = key): Promise<Answer> {
  const event = gatewayEvent(as, method, path, body);
  Object.assign(event.headers, headers);
  const res = await handleHttpRequest(event, deps, { requestId: randomUUID() });
  return {
    status: res.statusCode ?? 0,
    body: JSON.parse(res.body || 'null') as Answer['body'],
    headers: res.headers ?? {},
  };
}

interface Turn {
  turnId: string;
  turnToken: string;
  fence: number;
}

async function conversation(texts: string[] = []): Promise<string> {
  const path = `/conversations/turns.${randomUUID().slice(0, 8)}`;
  expect((await call('PUT', path, { format: 'chat' })).status).toBe(201);
  if (texts.length) await say(path, texts);
  return path;
}
const say = async (path: string, texts: string[], turn?: Turn) =>
  call(
    'POST',
    `${path}/messages`,
    { messages: texts.map((content) => ({ role: 'user', content })) },
    turn ? { 'turn-token': turn.turnToken } : {},
  );
const begin = async (path: string, body: Record<string, unknown> = {}) => call('POST', `${path}/turns`, body);
const granted = async (path: string, body: Record<string, unknown> = {}): Promise<Turn> => {
  const r = await begin(path, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.turn as Turn;
};
const contents = async (path: string) =>
  ((await call('GET', `${path}/messages`)).body.messages as { content: string }[]).map((m) => m.content);
const codeOf = (a: Answer) => [a.status, a.body?.error?.code];

describe('turns over HTTP (T1-T6)', () => {
  it('T1 T2 reject: a second begin is 409 conversation_busy naming the active turn (no token) with Retry-After; status never shows the token', async () => {
    const path = await conversation();
    const a = await granted(path);
    expect(a).toMatchObject({ turnId: expect.any(String), turnToken: expect.any(String), fence: 1 });
    const busy = await begin(path);
    expect(codeOf(busy)).toEqual([409, 'conversation_busy']);
    expect(busy.body.activeTurn).toEqual({ turnId: a.turnId, startedAt: expect.any(String), expiresAt: expect.any(String) });
    expect(Number(busy.headers['retry-after'])).toBeGreaterThan(0);
    const cur = await call('GET', `${path}/turns/current`);
    expect(cur.body.turn.turnId).toBe(a.turnId);
    expect(JSON.stringify(cur.body)).not.toContain(a.turnToken);
  });

  it('T2 interrupt / T3: the superseded turn cannot append or heartbeat; what it appended stays', async () => {
    const path = await conversation(['u0']);
    const a = await granted(path);
    expect((await say(path, ['a1'], a)).status).toBe(200);
    const b = await granted(path, { strategy: 'interrupt' });
    expect(b.fence).toBe(a.fence + 1);
    expect(codeOf(await say(path, ['a2'], a))).toEqual([409, 'turn_superseded']);
    expect(codeOf(await call('POST', `${path}/turns/${a.turnId}/heartbeat`, {}, { 'turn-token': a.turnToken }))).toEqual([
      409,
      'turn_superseded',
    ]);
    expect(codeOf(await call('DELETE', `${path}/messages/last`, undefined, { 'turn-token': a.turnToken }))).toEqual([
      409,
      'turn_superseded',
    ]);
    expect((await say(path, ['b1'], b)).status).toBe(200);
    expect(await contents(path)).toEqual(['u0', 'a1', 'b1']);
  });

  it("T2 rollback: the superseded turn's appends go in the same write; its later writes are refused", async () => {
    const path = await conversation(['u0']);
    const a = await granted(path);
    await say(path, ['a1', 'a2'], a);
    const b = await granted(path, { strategy: 'rollback' });
    expect(await contents(path)).toEqual(['u0']);
    expect(codeOf(await say(path, ['a3'], a))).toEqual([409, 'turn_superseded']);
    await say(path, ['b1'], b);
    expect(await contents(path)).toEqual(['u0', 'b1']);
  });

  it('T2 enqueue: waiters are granted in arrival order as each turn ends; one past waitMs is 409', async () => {
    const path = await conversation();
    const first = await granted(path);
    const order: number[] = [];
    const waiters = [0, 1, 2].map(async (i) => {
      await new Promise((r) => setTimeout(r, i * 150)); // arrive in order
      const t = await granted(path, { strategy: 'enqueue', waitMs: 20_000 });
      order.push(i);
      await say(path, [`w${i}`], t);
      expect((await call('DELETE', `${path}/turns/${t.turnId}`, undefined, { 'turn-token': t.turnToken })).status).toBe(204);
    });
    await new Promise((r) => setTimeout(r, 700));
    expect((await call('DELETE', `${path}/turns/${first.turnId}`, undefined, { 'turn-token': first.turnToken })).status).toBe(204);
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2]);
    expect(await contents(path)).toEqual(['w0', 'w1', 'w2']);
    await granted(path); // held, so the next enqueue gives up
    expect(codeOf(await begin(path, { strategy: 'enqueue', waitMs: 300 }))).toEqual([409, 'conversation_busy']);
  });

  it('T3 T6: writes after an end answer turn_ended, after an expiry turn_expired; the next begin is granted after the TTL', async () => {
    const path = await conversation();
    const a = await granted(path);
    expect((await call('DELETE', `${path}/turns/${a.turnId}`, undefined, { 'turn-token': a.turnToken })).status).toBe(204);
    expect(codeOf(await say(path, ['late'], a))).toEqual([409, 'turn_ended']);
    const b = await granted(path, { ttlMs: 5000 });
    expect(codeOf(await begin(path))).toEqual([409, 'conversation_busy']);
    await new Promise((r) => setTimeout(r, 5300));
    expect(codeOf(await say(path, ['expired'], b))).toEqual([409, 'turn_expired']);
    const c = await granted(path);
    expect((await say(path, ['c1'], c)).status).toBe(200);
    expect(await contents(path)).toEqual(['c1']);
  });

  it('T5: with turns required a write without a token is 409 turn_required; with one it lands; the policy shows on the conversation', async () => {
    const path = await conversation();
    const patched = await call('PATCH', path, { turns: 'required' });
    expect(patched.status).toBe(200);
    expect(patched.body.conversation.turns).toBe('required');
    expect(codeOf(await say(path, ['bare']))).toEqual([409, 'turn_required']);
    const t = await granted(path);
    expect((await say(path, ['held'], t)).status).toBe(200);
    expect(codeOf(await call('PATCH', path, { turns: 'sometimes' }))).toEqual([400, 'invalid_request']);
    expect(await contents(path)).toEqual(['held']);
  });

  it('T4: a turn spanning a rotation keeps writing on the child; compaction does not wait for the turn', async () => {
    const path = await conversation(Array.from({ length: 12 }, (_, i) => `message ${i} ${'lorem ipsum '.repeat(30)}`));
    const t = await granted(path);
    const rotated = await call('POST', `${path}/compress`, { mode: 'rotate' });
    expect(rotated.body.outcome, JSON.stringify(rotated.body)).toBe('compressed');
    expect((await say(path, ['after rotation'], t)).status).toBe(200);
    expect((await call('GET', `${path}/turns/current`)).body.turn.turnId).toBe(t.turnId);
    expect((await contents(path)).at(-1)).toBe('after rotation');
  });

  it('T3 tokens and tenants: a wrong token is 403 turn_token_invalid; a missing one on heartbeat/end is 400; another tenant gets 404; nothing changes', async () => {
    const path = await conversation();
    const a = await granted(path);
    const forged = `${a.turnId}.${'x'.repeat(32)}`;
    expect(codeOf(await say(path, ['forged'], { ...a, turnToken: forged }))).toEqual([403, 'turn_token_invalid']);
    expect(codeOf(await call('POST', `${path}/turns/${a.turnId}/heartbeat`, {}))).toEqual([400, 'invalid_request']);
    expect(codeOf(await call('DELETE', `${path}/turns/${a.turnId}`, undefined, { 'turn-token': forged }))).toEqual([
      403,
      'turn_token_invalid',
    ]);
    expect((await call('GET', `${path}/turns/current`, undefined, {}, otherKey)).status).toBe(404);
    expect((await call('POST', `${path}/turns`, { strategy: 'interrupt' }, {}, otherKey)).status).toBe(404);
    expect(codeOf(await begin(path, { strategy: 'sideways' }))).toEqual([400, 'invalid_request']);
    expect(codeOf(await begin(path, { ttlMs: 10 }))).toEqual([400, 'invalid_request']);
    expect((await call('GET', `${path}/turns/current`)).body.turn.turnId).toBe(a.turnId);
    expect(await contents(path)).toEqual([]);
  });

  it('T3 T4: a held commit sent with a Turn-Token lands only while that turn is current (409 turn_superseded, nothing written); without one it is never blocked by turns', async () => {
    const long = Array.from({ length: 8 }, (_, i) => `message ${i} ${'lorem ipsum '.repeat(30)}`);
    const summary = {
      messages: [
        { role: 'user', content: 'message 0' },
        { role: 'assistant', content: 'summary' },
      ],
    };
    const heldCommit = async (path: string, turn?: Turn) => {
      const begun = await call('POST', `${path}/compactions`, {});
      expect(begun.status, JSON.stringify(begun.body)).toBe(201);
      const { attemptId, leaseToken } = begun.body.attempt as { attemptId: string; leaseToken: string };
      return call('POST', `${path}/compactions/${attemptId}/commit`, summary, {
        'lease-token': leaseToken,
        ...(turn ? { 'turn-token': turn.turnToken } : {}),
      });
    };
    const path = await conversation(long);
    const a = await granted(path);
    await granted(path, { strategy: 'interrupt' });
    expect(codeOf(await heldCommit(path, a))).toEqual([409, 'turn_superseded']);
    expect(await contents(path)).toEqual(long);
    // A retry of the compaction under the current turn lands.
    const b = (await call('GET', `${path}/turns/current`)).body.turn as { turnId: string };
    expect(b.turnId).not.toBe(a.turnId);
    const other = await conversation(long);
    const current = await granted(other);
    expect((await heldCommit(other, current)).body.outcome).toBe('compressed');
    // T4: with turns required, a compaction without a token is not blocked.
    expect((await call('PATCH', path, { turns: 'required' })).status).toBe(200);
    expect((await heldCommit(path)).body.outcome).toBe('compressed');
    expect(await contents(path)).toEqual(['message 0', 'summary']);
  });

  it('T3 T5: a pop of an empty conversation is refused like any write: a superseded, ended or forged token, or none when turns are required', async () => {
    const pop = (path: string, turn?: Turn, token?: string) =>
      call('DELETE', `${path}/messages/last`, undefined, turn || token ? { 'turn-token': token ?? turn!.turnToken } : {});
    const path = await conversation();
    const a = await granted(path);
    const b = await granted(path, { strategy: 'interrupt' });
    expect(codeOf(await pop(path, a))).toEqual([409, 'turn_superseded']);
    expect(codeOf(await pop(path, undefined, `${b.turnId}.forged`))).toEqual([403, 'turn_token_invalid']);
    expect((await pop(path, b)).body.removed).toBeNull();
    expect((await call('DELETE', `${path}/turns/${b.turnId}`, undefined, { 'turn-token': b.turnToken })).status).toBe(204);
    expect(codeOf(await pop(path, b))).toEqual([409, 'turn_ended']);
    expect((await call('PATCH', path, { turns: 'required' })).status).toBe(200);
    expect(codeOf(await pop(path))).toEqual([409, 'turn_required']);
    expect(await contents(path)).toEqual([]);
  });
});
