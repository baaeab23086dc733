// SPEC X1 (with A3, A6, A7 where they apply): history transactions through the real handler on
// DynamoDB Local: append_items keyed by its operation id, replace_suffix in one conditional
// write, replays and reuse, suffix_mismatch with nothing changed, conversation scoping across a
// rotation and a delete, and the round trips of a warm replace.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { LiveTips } from '../../../lib/api/live-tips.js';
import { httpDeps } from '../../../lib/runtime.js';
import { gatewayEvent, testStackRuntime } from '../../support/in-process-api.js';
import { RoundTrips } from '../../support/round-trips.js';

const rt = testStackRuntime();
const tenantId = `x1-${randomUUID().slice(0, 8)}`;
let key: string;
let deps: ApiDeps;
let trips: RoundTrips;

beforeAll(async () => {
  const { dynamo, redis } = await rt.core();
  key = (await new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! }).create(tenantId)).key;
  trips = new RoundTrips().watchDynamo(dynamo).watchRedis(redis);
  deps = await httpDeps(rt);
});
afterAll(async () => {
  trips.restore();
  await rt.close();
});

interface Answer {
  status: number;
  body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  replayed: boolean;
}

async function call(
  method: string,
  path: string,
  body?: unknown,
  query?: Record<string, string>,
  via: ApiDeps = deps,
  sent: Record<string, string> = {},
): Promise<Answer> {
  const event = gatewayEvent(key, method, path, body, query);
  Object.assign(event.headers, sent);
  const res = await handleHttpRequest(event, via, { requestId: randomUUID() });
  const headers = (res.headers ?? {}) as Record<string, unknown>;
  return {
    status: res.statusCode ?? 0,
    body: JSON.parse(res.body || 'null') as Answer['body'],
    replayed: headers['idempotent-replayed'] === 'true',
  };
}

const user = (text: string) => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });

async function conversation(items: unknown[] = []): Promise<string> {
  const path = `/conversations/x1.${randomUUID().slice(0, 8)}`;
  expect((await call('PUT', path, { format: 'responses' })).status).toBe(201);
  if (items.length) expect((await call('POST', `${path}/messages`, { messages: items })).status).toBe(200);
  return path;
}

async function items(path: string): Promise<unknown[]> {
  return (await call('GET', `${path}/messages`, undefined, { limit: '1000' })).body.messages as unknown[];
}

const tx = (path: string, operationId: string, transaction: unknown) => call('POST', `${path}/transactions`, { operationId, transaction });
const append = (list: unknown[]) => ({ type: 'append_items', items: list });
const replace = (expectedSuffix: unknown[], replacement: unknown[]) => ({ type: 'replace_suffix', expectedSuffix, replacement });

describe('X1: history transactions', () => {
  it('X1/A3: append_items appends; the same operation id and transaction replays the first answer even after later appends', async () => {
    const path = await conversation([user('start')]);
    const first = await tx(path, 'op-a', append([user('committed')]));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ removed: 0, appended: 1 });
    await call('POST', `${path}/messages`, { messages: [user('later')] });
    const again = await tx(path, 'op-a', append([user('committed')]));
    expect(again).toMatchObject({ status: 200, replayed: true, body: first.body });
    expect(await items(path)).toEqual([user('start'), user('committed'), user('later')]);
  });

  it('X1: replace_suffix removes the live last items and appends the replacement; a retry is a no-op even when the suffix no longer matches', async () => {
    const path = await conversation([user('start'), user('blocked')]);
    const t = replace([user('blocked')], [user('accepted')]);
    const first = await tx(path, 'op-r', t);
    expect(first.body).toMatchObject({ removed: 1, appended: 1, session: { messageCount: 2 } });
    await call('POST', `${path}/messages`, { messages: [user('later')] });
    const again = await tx(path, 'op-r', t);
    expect(again).toMatchObject({ status: 200, replayed: true, body: first.body });
    expect(await items(path)).toEqual([user('start'), user('accepted'), user('later')]);
  });

  it('X1: the suffix is compared as canonical JSON (key order and spelling do not matter)', async () => {
    const path = await conversation([{ role: 'user', type: 'message', content: [{ text: 'é', type: 'input_text' }] }]);
    const r = await tx(path, 'op-canon', replace([user('é')], [user('replaced')]));
    expect(r.status).toBe(200);
    expect(await items(path)).toEqual([user('replaced')]);
  });

  it('X1: a suffix mismatch answers 409 suffix_mismatch with the count, changes nothing and does not record the operation id', async () => {
    const path = await conversation([user('start')]);
    const miss = await tx(path, 'op-m', replace([user('different')], [user('accepted')]));
    expect(miss.status).toBe(409);
    expect(miss.body).toMatchObject({ error: { code: 'suffix_mismatch' }, messageCount: 1 });
    const longer = await tx(path, 'op-m', replace([user('x'), user('start')], []));
    expect(longer.body).toMatchObject({ error: { code: 'suffix_mismatch' }, messageCount: 1 });
    expect(await items(path)).toEqual([user('start')]);
    // Not recorded: the same id with another transaction is not a reuse.
    const ok = await tx(path, 'op-m', replace([user('start')], [user('accepted')]));
    expect(ok.status).toBe(200);
    expect(await items(path)).toEqual([user('accepted')]);
  });

  it('X1/A3: the same operation id with another transaction is 422 idempotency_key_reused; an empty append counts as a transaction', async () => {
    const path = await conversation();
    expect((await tx(path, 'op-e', append([]))).body).toMatchObject({ removed: 0, appended: 0 });
    const reused = await tx(path, 'op-e', append([user('unexpected')]));
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe('idempotency_key_reused');
    expect((await tx(path, 'op-e', append([]))).replayed).toBe(true);
    const other = await tx(path, 'op-f', append([user('first')]));
    expect(other.status).toBe(200);
    expect((await tx(path, 'op-f', replace([], [user('first')]))).status).toBe(422);
    expect(await items(path)).toEqual([user('first')]);
  });

  it('X1: items the format refuses get 400 naming the field, and the operation id is not recorded', async () => {
    const path = await conversation([user('start')]);
    const bad = await tx(path, 'op-bad', replace([user('start')], [{ type: 'message', role: 'user', content: 42 }]));
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('transaction.replacement[0]');
    expect((await tx(path, 'op-bad', append([user('fine')]))).status).toBe(200);
    expect((await tx(path, 'op-blank', append([]))).status).toBe(200);
    expect((await tx(path, '   ', append([]))).status).toBe(400);
    expect((await call('POST', `${path}/transactions`, { operationId: 'x', transaction: { type: 'unknown' } })).status).toBe(400);
    expect((await call('POST', `${path}/transactions`, { operationId: 'x', transaction: { ...append([]), extra: 1 } })).status).toBe(400);
    expect(await items(path)).toEqual([user('start'), user('fine')]);
  });

  it('X1/K2: the operation id is scoped to the conversation: a retry after a rotation replays; a delete and re-create forgets it', async () => {
    const path = await conversation([user('a'), user('b'), user('c'), user('d')]);
    const first = await tx(path, 'op-rot', append([user('e')]));
    const rotated = await call('POST', `${path}/compress`, { mode: 'rotate', keepLast: 2 });
    expect(rotated.status).toBe(200);
    const again = await tx(path, 'op-rot', append([user('e')]));
    expect(again).toMatchObject({ replayed: true, body: first.body });
    expect((await call('DELETE', path)).status).toBe(204);
    expect((await call('PUT', path, { format: 'responses' })).status).toBe(201);
    const fresh = await tx(path, 'op-rot', append([user('e')]));
    expect(fresh.replayed).toBe(false);
    expect(await items(path)).toEqual([user('e')]);
  });

  it('X1: the session-route twin keys the operation id to the session', async () => {
    const path = await conversation([user('s')]);
    const live = (await call('GET', path)).body.conversation.liveSessionId as string;
    const first = await tx(`/sessions/${live}`, 'op-s', replace([user('s')], [user('t'), user('u')]));
    expect(first.body).toMatchObject({ removed: 1, appended: 2 });
    expect((await tx(`/sessions/${live}`, 'op-s', replace([user('s')], [user('t'), user('u')]))).replayed).toBe(true);
    expect(await items(path)).toEqual([user('t'), user('u')]);
  });

  it('X1/A7: a replacement beyond one transaction (many items, megabytes) lands whole, and replaces a suffix spanning packed rows', async () => {
    const path = await conversation(Array.from({ length: 30 }, (_, i) => user(`old ${i}`)));
    const big = Array.from({ length: 40 }, (_, i) => user(`${i} ${'x'.repeat(100_000)}`));
    const suffix = Array.from({ length: 25 }, (_, i) => user(`old ${i + 5}`));
    const r = await tx(path, 'op-big', replace(suffix, big));
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
    expect(r.body).toMatchObject({ removed: 25, appended: 40, session: { messageCount: 45 } });
    expect(await items(path)).toEqual([...Array.from({ length: 5 }, (_, i) => user(`old ${i}`)), ...big]);
    // And back again: a suffix of large rows (their chunks written ahead) replaced by one item.
    const back = await tx(path, 'op-back', replace(big.slice(10), [user('small')]));
    expect(back.body).toMatchObject({ removed: 30, appended: 1 });
    expect(await items(path)).toEqual([...Array.from({ length: 5 }, (_, i) => user(`old ${i}`)), ...big.slice(0, 10), user('small')]);
  });

  it('X1/P5: a warm replace_suffix is one tail read and one conditional write; a warm append_items one write', async () => {
    const warm: ApiDeps = { ...deps, liveTips: new LiveTips() };
    const path = await conversation([user('a'), user('b')]);
    await call('GET', path, undefined, undefined, warm);
    await call('POST', `${path}/messages`, { messages: [user('c')] }, undefined, warm);
    const r = await trips.during(() =>
      handleHttpRequest(
        gatewayEvent(key, 'POST', `${path}/transactions`, { operationId: 'op-warm', transaction: replace([user('c')], [user('d')]) }),
        warm,
        { requestId: randomUUID() },
      ),
    );
    expect(r.result.statusCode, r.result.body).toBe(200);
    expect(r.phases.dynamoSteps).toBe(2);
    const a = await trips.during(() =>
      handleHttpRequest(
        gatewayEvent(key, 'POST', `${path}/transactions`, { operationId: 'op-warm-a', transaction: append([user('e')]) }),
        warm,
        { requestId: randomUUID() },
      ),
    );
    expect(a.result.statusCode, a.result.body).toBe(200);
    expect(a.phases.dynamoSteps).toBe(1);
  });

  it('T3/T5/X1: over HTTP a transaction carries the Turn-Token: a superseded turn is refused (both kinds); with turns required none lands without one', async () => {
    const path = await conversation([user('a')]);
    const a = (await call('POST', `${path}/turns`, {})).body.turn as { turnToken: string };
    const asA = { 'turn-token': a.turnToken };
    expect(
      (await call('POST', `${path}/transactions`, { operationId: randomUUID(), transaction: append([user('b')]) }, undefined, deps, asA))
        .status,
    ).toBe(200);
    expect((await call('POST', `${path}/turns`, { strategy: 'interrupt' })).status).toBe(201);
    const late = await call(
      'POST',
      `${path}/transactions`,
      { operationId: randomUUID(), transaction: append([user('c')]) },
      undefined,
      deps,
      asA,
    );
    expect([late.status, late.body.error?.code]).toEqual([409, 'turn_superseded']);
    const lateReplace = await call(
      'POST',
      `${path}/transactions`,
      { operationId: randomUUID(), transaction: replace([user('b')], [user('d')]) },
      undefined,
      deps,
      asA,
    );
    expect([lateReplace.status, lateReplace.body.error?.code]).toEqual([409, 'turn_superseded']);
    expect((await call('PATCH', path, { turns: 'required' })).status).toBe(200);
    const bare = await tx(path, randomUUID(), replace([user('b')], [user('e')]));
    expect([bare.status, bare.body.error?.code]).toEqual([409, 'turn_required']);
    expect(await items(path)).toEqual([user('a'), user('b')]);
  });

  it('X1: an expected suffix spanning more stored rows than one transaction removes is 413 saying so, and nothing changes (the operation id stays free)', async () => {
    // One append per item: one stored row per item, so 120 items are 120 rows to remove (about 90 fit).
    const path = await conversation();
    const all = Array.from({ length: 120 }, (_, i) => user(`m${i}`));
    for (const it of all) expect((await call('POST', `${path}/messages`, { messages: [it] })).status).toBe(200);
    const big = await tx(path, 'op-big', replace(all, [user('r')]));
    expect([big.status, big.body.error?.code]).toEqual([413, 'payload_too_large']);
    expect(big.body.error.message).toMatch(/expected suffix/);
    expect(await items(path)).toEqual(all);
    const small = await tx(path, 'op-big', replace(all.slice(-2), [user('r')]));
    expect(small.body).toMatchObject({ removed: 2, appended: 1 });
  });
});
