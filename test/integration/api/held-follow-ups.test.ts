// What a held attempt leaves for operators and what it leaves behind (SPEC E3, E8, H4, issue 14):
// its commit is announced (SessionCompacted) and counted (EMF) as the service engine's commits
// are; its outcome rows go when its session or conversation is deleted; and the conversation-form
// routes refuse another conversation's attempt id before anything is read or changed.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { handleHttpRequest } from '../../../functions/adapters/api-gateway.js';
import type { ApiDeps } from '../../../lib/api/http-app.js';
import { readCompactionEvents } from '../../../lib/events/index.js';
import { sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import { httpDeps, Runtime } from '../../../lib/runtime.js';
import { sessionKey, type SessionRef } from '../../../lib/session-ref.js';
import { jsonLinesWritten } from '../../support/json-output.js';
import { RoundTrips } from '../../support/round-trips.js';
import { gatewayEvent } from '../../support/in-process-api.js';

const dir = mkdtempSync(join(tmpdir(), 'held-events-'));
const eventsFile = join(dir, 'events.jsonl');
const rt = new Runtime({
  env: {
    REDIS_URLS: process.env.REDIS_URLS!,
    DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT!,
    TABLE_NAME: process.env.TABLE_NAME!,
    RATE_LIMIT_REQUESTS_PER_SECOND: '0',
    RATE_LIMIT_COMPRESSIONS_PER_MINUTE: '0',
    RATE_LIMIT_BODY_BYTES_PER_SECOND: '0',
    LOCAL_EVENTS_FILE: eventsFile,
    POWERTOOLS_SERVICE_NAME: 'slc-held-test',
  },
});
const tenantId = `heldfu-${randomUUID().slice(0, 8)}`;
let key: string;
let deps: ApiDeps;
let trips: RoundTrips;

beforeAll(async () => {
  const { dynamo, redis } = await rt.core();
  key = (await new ApiKeyStore({ client: dynamo, tableName: process.env.TABLE_NAME! }).create(tenantId)).key;
  deps = await httpDeps(rt);
  trips = new RoundTrips().watchDynamo(dynamo).watchRedis(redis);
});
afterAll(async () => {
  trips.restore();
  await rt.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function call(method: string, path: string, opts: { body?: unknown; token?: string; requestId?: string } = {}): Promise<Answer> {
  const event = gatewayEvent(key, method, path, opts.body);
  if (opts.token !== undefined) event.headers['lease-token'] = opts.token;
  const r = await handleHttpRequest(event, deps, { requestId: opts.requestId ?? randomUUID() });
  return { status: r.statusCode ?? 0, body: r.body ? JSON.parse(r.body) : undefined };
}

const turns = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} ${'words '.repeat(20)}` }));
const summary = [
  { role: 'user', content: 'the human asked for a summary' },
  { role: 'assistant', content: 'SUMMARY of the work so far' },
];

async function conversation(): Promise<{ id: string; sessionId: string }> {
  const id = `hf-${randomUUID().slice(0, 8)}`;
  const put = await call('PUT', `/conversations/${id}`, { body: {} });
  expect((await call('POST', `/conversations/${id}/messages`, { body: { messages: turns(8) } })).status).toBe(200);
  return { id, sessionId: put.body.conversation.liveSessionId };
}

const emfOf = (lines: Record<string, unknown>[]) => lines.filter((l) => '_aws' in l);

async function heldRows(ref: SessionRef): Promise<number> {
  const { dynamo } = await rt.core();
  const out = await DynamoDBDocumentClient.from(dynamo).send(
    new QueryCommand({
      TableName: process.env.TABLE_NAME!,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
      ExpressionAttributeValues: { ':pk': sessionPk(ref), ':p': 'HELD#' },
      ConsistentRead: true,
    }),
  );
  return out.Items?.length ?? 0;
}

describe('held attempts: follow-ups and leftovers', () => {
  it('E3: a held commit publishes SessionCompacted with its request id and is counted like a service commit; a repeated commit neither publishes nor counts again', async () => {
    const conv = await conversation();
    const { attempt } = (await call('POST', `/conversations/${conv.id}/compactions`, { body: { mode: 'rotate' } })).body;
    const path = `/conversations/${conv.id}/compactions/${attempt.attemptId}/commit`;
    const { value: first, lines } = await jsonLinesWritten(() =>
      call('POST', path, { token: attempt.leaseToken, body: { messages: summary }, requestId: 'req-held-1' }),
    );
    expect(first.body.outcome).toBe('compressed');
    const emf = emfOf(lines);
    expect(emf).toContainEqual(
      expect.objectContaining({ Compactions: 1, outcome: 'compressed', reason: 'none', service: 'slc-held-test' }),
    );
    expect(emf).toContainEqual(expect.objectContaining({ LeaseUnavailable: 0 }));
    expect(emf.some((l) => typeof l.CommitLatency === 'number')).toBe(true);
    const events = (await readCompactionEvents(eventsFile)).filter((e) => e.parentSessionId === conv.sessionId);
    expect(events).toEqual([
      expect.objectContaining({
        tenantId,
        conversationId: conv.id,
        parentSessionId: conv.sessionId,
        childSessionId: first.body.sessionId,
        sessionId: first.body.sessionId,
        mode: 'rotate',
        correlationId: 'req-held-1',
      }),
    ]);
    const { value: again, lines: replayLines } = await jsonLinesWritten(() =>
      call('POST', path, { token: attempt.leaseToken, body: { messages: summary } }),
    );
    expect(again.body).toMatchObject({ outcome: 'compressed', replayed: true });
    expect(emfOf(replayLines)).toEqual([]);
    expect((await readCompactionEvents(eventsFile)).filter((e) => e.parentSessionId === conv.sessionId)).toHaveLength(1);
  });

  it('E3: an in-place held commit is announced with its generation; a loser, a no-op and an abort are counted, and none is announced', async () => {
    const conv = await conversation();
    const { attempt } = (await call('POST', `/sessions/${conv.sessionId}/compactions`, { body: {} })).body;
    const { value: loser, lines: loserLines } = await jsonLinesWritten(() =>
      call('POST', `/sessions/${conv.sessionId}/compactions`, { body: {} }),
    );
    expect(loser.body).toMatchObject({ outcome: 'skipped', reason: 'locked' });
    expect(emfOf(loserLines)).toContainEqual(expect.objectContaining({ Compactions: 1, outcome: 'skipped', reason: 'locked' }));
    expect(emfOf(loserLines)).toContainEqual(expect.objectContaining({ LeaseContention: 1 }));
    const { lines: abortLines } = await jsonLinesWritten(() =>
      call('DELETE', `/sessions/${conv.sessionId}/compactions/${attempt.attemptId}`, { token: attempt.leaseToken }),
    );
    expect(emfOf(abortLines)).toContainEqual(expect.objectContaining({ Compactions: 1, outcome: 'cancelled', reason: 'none' }));

    const noopAttempt = (await call('POST', `/sessions/${conv.sessionId}/compactions`, { body: {} })).body.attempt;
    const { value: noop, lines: noopLines } = await jsonLinesWritten(() =>
      call('POST', `/sessions/${conv.sessionId}/compactions/${noopAttempt.attemptId}/commit`, {
        token: noopAttempt.leaseToken,
        body: { messages: [] },
      }),
    );
    expect(noop.body).toMatchObject({ outcome: 'noop', reason: 'empty_result' });
    expect(emfOf(noopLines)).toContainEqual(expect.objectContaining({ Compactions: 1, outcome: 'noop', reason: 'empty_result' }));
    expect((await readCompactionEvents(eventsFile)).filter((e) => e.parentSessionId === conv.sessionId)).toEqual([]);

    const next = (await call('POST', `/sessions/${conv.sessionId}/compactions`, { body: {} })).body.attempt;
    const done = await call('POST', `/sessions/${conv.sessionId}/compactions/${next.attemptId}/commit`, {
      token: next.leaseToken,
      body: { messages: summary },
    });
    expect(done.body).toMatchObject({ outcome: 'compressed', mode: 'in_place' });
    expect((await readCompactionEvents(eventsFile)).filter((e) => e.parentSessionId === conv.sessionId)).toEqual([
      expect.objectContaining({ mode: 'in_place', sessionId: conv.sessionId, generation: done.body.generation, conversationId: conv.id }),
    ]);
  });

  it("H4: deleting a session or a conversation removes its held attempts' outcome rows (the purge takes HELD# rows with the items)", async () => {
    const { store } = await rt.core();
    const leave = async (conv: { id: string; sessionId: string }) => {
      const a = (await call('POST', `/sessions/${conv.sessionId}/compactions`, { body: {} })).body.attempt;
      await call('DELETE', `/sessions/${conv.sessionId}/compactions/${a.attemptId}`, { token: a.leaseToken });
      const b = (await call('POST', `/sessions/${conv.sessionId}/compactions`, { body: {} })).body.attempt;
      await call('POST', `/sessions/${conv.sessionId}/compactions/${b.attemptId}/commit`, {
        token: b.leaseToken,
        body: { messages: summary },
      });
      const ref = { tenantId, sessionId: conv.sessionId };
      expect(await heldRows(ref)).toBe(2);
      return ref;
    };
    const bySession = await leave(await conversation());
    const byConversation = await conversation();
    const convRef = await leave(byConversation);
    expect((await call('DELETE', `/sessions/${bySession.sessionId}`)).status).toBe(204);
    expect((await call('DELETE', `/conversations/${byConversation.id}`)).status).toBe(204);
    // The purge the delete started in the background, run to its end as the sweep would (S1).
    for (const ref of [bySession, convRef]) {
      await store.runTask({ ref, kind: 'purge', generation: 0, dueAt: Date.now() });
      expect(await heldRows(ref)).toBe(0);
    }
  });

  it("E8: a conversation-form route refuses another conversation's attempt id with 404, before any Redis or DynamoDB call, and changes nothing", async () => {
    const a = await conversation();
    const b = await conversation();
    const { attempt } = (await call('POST', `/conversations/${a.id}/compactions`, { body: { mode: 'rotate' } })).body;
    await call('GET', `/conversations/${b.id}`); // the API key is cached from here on
    const base = `/conversations/${b.id}/compactions/${attempt.attemptId}`;
    for (const [method, path, body] of [
      ['GET', base, undefined],
      ['POST', `${base}/heartbeat`, undefined],
      ['POST', `${base}/commit`, { messages: summary }],
      ['DELETE', base, undefined],
    ] as const) {
      const { result, calls } = await trips.during(() => call(method, path, { token: attempt.leaseToken, body }));
      expect([method, path, result.status, result.body.error.code]).toEqual([method, path, 404, 'not_found']);
      expect(calls).toEqual([]);
    }
    const { store, lease } = await rt.core();
    const ref = { tenantId, sessionId: a.sessionId };
    expect((await store.getSession(ref))?.attempt?.held).toBeDefined();
    expect(await lease.holderOf(sessionKey(ref))).not.toBeNull();
    expect(await store.children(ref)).toEqual([]);
    // Still the agent's: its own conversation's route commits it.
    const ok = await call('POST', `/conversations/${a.id}/compactions/${attempt.attemptId}/commit`, {
      token: attempt.leaseToken,
      body: { messages: summary },
    });
    expect(ok.body.outcome).toBe('compressed');
  });
});
