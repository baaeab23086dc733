// H4: erase means erase. A conversation that used every kind of storage (a keyed create, keyed
// appends on both routes, an in-place compaction's archived generation, a rotation, a big append
// written ahead in chunks, chunks of a writer that died, a history transaction, held attempts'
// outcomes, a turn, a branch of it) is deleted through the API; once the purge ran to completion
// (the sweep's work list, driven as the sweep drives it), every item of the table under the
// tenant's keys is listed and none of that conversation's is left. The branch, a conversation of its
// own, stays whole. On a table of its own, so the Scan sees only this test's items.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { createIdempotencyKey, metaKey, sessionPk, taskSk } from '../../../lib/lineage/dynamo/keys.js';
import { writeParts } from '../../../lib/lineage/dynamo/parts.js';
import { packRows } from '../../../lib/lineage/dynamo/rows.js';
import { Table } from '../../../lib/lineage/dynamo/table.js';
import type { LineageStore } from '../../../lib/lineage/types.js';
import { httpDeps, Runtime } from '../../../lib/runtime.js';
import { createDynamoClient } from '../../../lib/aws-clients.js';
import { runSweep, type SweepResult } from '../../../lib/sweep/run-sweep.js';
import { gatewayEvent } from '../../support/in-process-api.js';
import { infraTable } from '../sweep/own-table.js';

const ddb: DynamoDBClient = createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT, maxAttempts: 3 });
const doc = DynamoDBDocumentClient.from(ddb);
const tenantId = `erase-${randomUUID().slice(0, 8)}`;
let tableName: string;
let rt: Runtime;
let deps: ApiDeps;
let key: string;

beforeAll(async () => {
  tableName = await infraTable(ddb, 'erase');
  rt = new Runtime({
    env: {
      REDIS_URLS: process.env.REDIS_URLS!,
      DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT!,
      TABLE_NAME: tableName,
      RATE_LIMIT_REQUESTS_PER_SECOND: '0',
      RATE_LIMIT_COMPRESSIONS_PER_MINUTE: '0',
      RATE_LIMIT_BODY_BYTES_PER_SECOND: '0',
    },
  });
  key = (await new ApiKeyStore({ client: ddb, tableName }).create(tenantId)).key;
  deps = await httpDeps(rt);
}, 60_000);
afterAll(async () => {
  await rt?.close();
  ddb.destroy();
});

interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const event = gatewayEvent(key, method, path, body);
  Object.assign(event.headers, headers);
  const r = await handleHttpRequest(event, deps, { requestId: randomUUID() });
  const answer = { status: r.statusCode ?? 0, body: r.body ? JSON.parse(r.body) : undefined };
  expect(answer.status, `${method} ${path}: ${r.body}`).toBeLessThan(300);
  return answer;
}

const say = (n: number) => ({ role: n % 2 ? 'assistant' : 'user', content: `turn ${n} ${'words '.repeat(30)}` });
const summary = [
  { role: 'user', content: 'the human asked for a summary' },
  { role: 'assistant', content: 'SUMMARY of the work so far' },
];

/** Every item of the table whose pk is under the tenant's keys (`T#<tenant>#...`). */
async function tenantItems(): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(
      new ScanCommand({
        TableName: tableName,
        FilterExpression: 'begins_with(pk, :t)',
        ExpressionAttributeValues: { ':t': `T#${tenantId}#` },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

/** The scheduled sweep (S1, S2) on this table until a run finds no due task left; its fork audit too. */
async function sweepTasks(store: LineageStore): Promise<SweepResult[]> {
  const runs: SweepResult[] = [];
  for (let round = 0; round < 20; round++) {
    const r = await runSweep({ store, now: () => Date.now() + 1000 });
    runs.push(r);
    if (r.tasksRun === 0) return runs;
  }
  throw new Error('the sweep kept finding due tasks');
}

describe('H4: erase means erase', () => {
  it('H4: deleting a conversation that used everything leaves no item of it under the tenant once the purge ran; its branch stays whole', async () => {
    const { store } = await rt.core();
    // A keyed create (its key's record, T#<tenant>#IDEM#..., holds the answer: the session).
    const created = await call('POST', '/sessions', { format: 'chat', metadata: { user: 'u1' } }, { 'idempotency-key': 'create-1' });
    const root: string = created.body.session.sessionId;
    const conv = `/conversations/${root}`;
    // Keyed appends on both routes (conversation-scoped and session-scoped key records).
    await call('POST', `${conv}/messages`, { messages: [1, 2, 3, 4].map(say) }, { 'idempotency-key': 'append-1' });
    await call('POST', `/sessions/${root}/messages`, { messages: [5, 6, 7, 8].map(say) }, { 'idempotency-key': 'append-2' });
    // A held in-place compaction: an archived generation and a held outcome row.
    const inPlace = (await call('POST', `/sessions/${root}/compactions`, {})).body.attempt;
    const done = await call(
      'POST',
      `/sessions/${root}/compactions/${inPlace.attemptId}/commit`,
      { messages: summary },
      {
        'lease-token': inPlace.leaseToken,
      },
    );
    expect(done.body).toMatchObject({ outcome: 'compressed', mode: 'in_place' });
    await store.runTask({ ref: { tenantId, sessionId: root }, kind: 'archive', generation: 0, dueAt: Date.now() });
    // A history transaction (its operation id is a conversation-scoped key record).
    await call('POST', `${conv}/transactions`, {
      operationId: 'op-1',
      transaction: { type: 'replace_suffix', expectedSuffix: [summary[1]], replacement: [summary[1], say(9)] },
    });
    // A rotation, through a held attempt (another outcome row, on the parent).
    const rot = (await call('POST', `${conv}/compactions`, { mode: 'rotate' })).body.attempt;
    const rotated = await call(
      'POST',
      `${conv}/compactions/${rot.attemptId}/commit`,
      { messages: summary },
      { 'lease-token': rot.leaseToken },
    );
    const child: string = rotated.body.sessionId;
    expect(child).not.toBe(root);
    // A big append (past one transaction: chunks written ahead, PART#), keyed, on the child.
    const big = Array.from({ length: 5 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${i} ${'x'.repeat(850_000)}` }));
    await call('POST', `${conv}/messages`, { messages: big }, { 'idempotency-key': 'append-big' });
    await call('POST', `/sessions/${child}/messages`, { messages: [say(11)] }, { 'idempotency-key': 'append-child' });
    // Chunks of a writer that died before its commit (PART# and TASK#parts, not due for 30 minutes).
    const table = new Table({ client: ddb, tableName });
    await writeParts(
      table,
      sessionPk({ tenantId, sessionId: child }),
      packRows([{ body: '"orphan"', bytes: 8, tokens: 1 }]).map((g) => g),
    );
    // A held attempt aborted (an outcome row on the child), and a turn.
    const held = (await call('POST', `${conv}/compactions`, {})).body.attempt;
    await call('DELETE', `${conv}/compactions/${held.attemptId}`, undefined, { 'lease-token': held.leaseToken });
    const turn = (await call('POST', `${conv}/turns`, {})).body.turn;
    await call('POST', `${conv}/messages`, { messages: [say(10)] }, { 'turn-token': turn.turnToken, 'idempotency-key': 'append-turn' });
    // A branch of it (its key's record is the source conversation's), and one leftover tombstone:
    // the ended parent deleted on its own first (it keeps its record for its relatives until then).
    const branch = await call('POST', `${conv}/branches`, { conversationId: `${root}.branch` }, { 'idempotency-key': 'branch-1' });
    const branchRoot: string = branch.body.conversation.rootSessionId;
    await call('DELETE', `/sessions/${root}`);

    const before = await tenantItems();
    const sks = (sessionId: string) => before.filter((i) => i.pk === sessionPk({ tenantId, sessionId })).map((i) => String(i.sk));
    // Everything the scenario was meant to store is there before the delete.
    expect(sks(child).some((sk) => sk.startsWith('PART#'))).toBe(true);
    expect(sks(child).some((sk) => sk.startsWith('TASK#parts#'))).toBe(true);
    expect(sks(child).some((sk) => sk.startsWith('IDEM#'))).toBe(true);
    expect(sks(child).some((sk) => sk.startsWith('HELD#'))).toBe(true);
    expect(before.some((i) => i.pk === createIdempotencyKey(tenantId, 'create-1').pk)).toBe(true);
    expect(before.some((i) => i.pk === `T#${tenantId}#C#${root}` && String(i.sk).startsWith('IDEM#'))).toBe(true);
    expect(before.some((i) => i.pk === metaKey({ tenantId, sessionId: root }).pk && i.sk === 'META' && i.deletedAt)).toBe(true);

    await call('DELETE', conv);
    const runs = await sweepTasks(store);
    // S2/H2: the branch is no rotation child: the audit finds no fork (one child, one branch).
    expect(runs.map((r) => r.forksFound)).toEqual(runs.map(() => 0));

    const mine = (pk: string) =>
      pk === `T#${tenantId}#C#${root}` ||
      pk === createIdempotencyKey(tenantId, 'create-1').pk ||
      pk === sessionPk({ tenantId, sessionId: root }) ||
      pk === sessionPk({ tenantId, sessionId: child });
    const left = (await tenantItems()).map((i) => `${String(i.pk)} ${String(i.sk)}`);
    expect(left.filter((k) => mine(k.split(' ')[0]!))).toEqual([]);
    // What is left is the branch's, whole: its conversation and its root session.
    const branchPks = new Set([`T#${tenantId}#C#${root}.branch`, sessionPk({ tenantId, sessionId: branchRoot })]);
    expect(left.filter((k) => !branchPks.has(k.split(' ')[0]!))).toEqual([]);
    const items = (await call('GET', `/conversations/${root}.branch/messages`, undefined)).body.messages;
    expect(items).toHaveLength(branch.body.conversation.messageCount);
    expect(items.at(-1)).toEqual(say(10));
    // The ids answer as never used: 404, and the conversation id can be created afresh.
    expect((await handleHttpRequest(gatewayEvent(key, 'GET', `/sessions/${child}`), deps, { requestId: 'x' })).statusCode).toBe(404);
    expect((await call('PUT', conv, {})).status).toBe(201);
  }, 120_000);

  it('H4: DELETE /sessions/{id} of a live session takes its conversation along and erases it the same way', async () => {
    const { store } = await rt.core();
    const s = (await call('POST', '/sessions', {}, { 'idempotency-key': 'create-live' })).body.session;
    await call('POST', `/sessions/${s.sessionId}/messages`, { messages: [say(1), say(2)] }, { 'idempotency-key': 'a-1' });
    await call('POST', `/conversations/${s.sessionId}/messages`, { messages: [say(3)] }, { 'idempotency-key': 'a-2' });
    await call('DELETE', `/sessions/${s.sessionId}`);
    await sweepTasks(store);
    const gone = [
      sessionPk({ tenantId, sessionId: s.sessionId }),
      `T#${tenantId}#C#${s.sessionId}`,
      createIdempotencyKey(tenantId, 'create-live').pk,
    ];
    expect((await tenantItems()).filter((i) => gone.includes(String(i.pk)))).toEqual([]);
  });

  it('H4 (ERASE_ONLY_DELETED): a purge task that says erase never removes a live session record', async () => {
    const { store } = await rt.core();
    const s = (await call('POST', '/sessions', {})).body.session;
    const ref = { tenantId, sessionId: s.sessionId as string };
    await doc.send(
      new PutCommand({
        TableName: tableName,
        Item: {
          pk: sessionPk(ref),
          sk: taskSk('purge', 0),
          kind: 'purge',
          generation: 0,
          erase: { conversationId: ref.sessionId, rootSessionId: ref.sessionId },
        },
      }),
    );
    await store.runTask({ ref, kind: 'purge', generation: 0, dueAt: Date.now() });
    expect(await store.getSession(ref)).toMatchObject({ sessionId: ref.sessionId });
  });

  it("H4 (CREATE_KEY_OF_SESSION): a create key reused after its retention by another create keeps that create's record", async () => {
    const { store } = await rt.core();
    const first = (await call('POST', '/sessions', {}, { 'idempotency-key': 'reused-create' })).body.session;
    // A day later the key's record has expired (TTL lags) and another create took the key.
    const idem = createIdempotencyKey(tenantId, 'reused-create');
    await doc.send(
      new PutCommand({
        TableName: tableName,
        Item: {
          ...idem,
          requestHash: 'h',
          status: 201,
          bodyJson: '{"session":{"sessionId":"other"}}',
          expiresAt: 1,
          createdAt: new Date().toISOString(),
        },
      }),
    );
    await call('DELETE', `/sessions/${first.sessionId}`);
    await store.runTask({ ref: { tenantId, sessionId: first.sessionId }, kind: 'purge', generation: 0, dueAt: Date.now() });
    const left = (await tenantItems()).filter((i) => i.pk === idem.pk);
    expect(left.map((i) => i.bodyJson)).toEqual(['{"session":{"sessionId":"other"}}']);
  });
});
