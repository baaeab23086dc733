// End to end through serverless-offline: the built afterTurn and sweep functions invoked via
// the Lambda Invoke API, and the HTTP function publishing after-turn events to afterTurn.
// The service runs on its own table so the sweep sees only this file's sessions.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../../lib/api/api-keys.js';
import { sqsShapedEvent } from '../../../lib/after-turn/local-invoke.js';
import { adapterFor } from '../../../lib/items/adapters.js';
import { pairCalls } from '../../../lib/items/pairing.js';
import type { Item } from '../../../lib/items/types.js';
import type { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { longResponsesTranscript } from '../../fixtures/transcripts/index.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';
import { apiClient } from '../http/api-client.js';
import { idempotencyRecord, transcript } from '../../integration/after-turn/harness.js';
import { killedRotation, messageItemCount } from '../../integration/sweep/killed-invocation.js';
import { storeOnOwnTable } from '../../integration/sweep/own-table.js';

const endpoint = process.env.DYNAMODB_ENDPOINT!;
let ddb: DynamoDBClient;
let tableName: string;
let store: DynamoLineageStore;
let svc: LocalService;

beforeAll(async () => {
  ({ ddb, tableName, store } = await storeOnOwnTable('e2e-queue'));
  svc = await startLocalService({ env: { TABLE_NAME: tableName, COMPACTION_TOKEN_THRESHOLD: '1000' } });
}, 240_000);

afterAll(async () => {
  await svc?.stop();
  ddb?.destroy();
});

async function seed(): Promise<SessionRef> {
  const created = await store.createSession({ tenantId: `t-${randomUUID()}`, source: 'e2e-queue' });
  if (created.replayed) throw new Error('a create without an Idempotency-Key cannot be a replay');
  const ref = { tenantId: created.session.tenantId, sessionId: created.session.sessionId };
  await store.appendItems(ref, { prepare: asIs(transcript(12)) });
  return ref;
}

describe('after-turn and sweep functions under serverless-offline', () => {
  it('F3: an SQS event redelivered with the same messageId compacts once', async () => {
    const ref = await seed();
    const messageId = randomUUID();
    const event = sqsShapedEvent([{ messageId, body: JSON.stringify({ ...ref, origin: 'turn' }) }]);

    expect(await svc.invoke('afterTurn', event)).toEqual({ batchItemFailures: [] });
    const children = await store.children(ref);
    expect(children).toHaveLength(1);
    expect(await idempotencyRecord(ddb, messageId, tableName)).toMatchObject({ status: 'COMPLETED' });
    const parentAfterFirst = await store.getSession(ref);

    expect(
      await svc.invoke('afterTurn', sqsShapedEvent([{ messageId, body: JSON.stringify({ ...ref, origin: 'turn' }) }], 'us-east-1', 2)),
    ).toEqual({
      batchItemFailures: [],
    });
    expect(await store.children(ref)).toEqual(children);
    expect(await store.getSession(ref)).toEqual(parentAfterFirst);
    const child = { tenantId: ref.tenantId, sessionId: children[0]!.sessionId };
    expect(await store.children(child)).toEqual([]);
    expect((await store.getSession(child))?.fence).toBeUndefined();
  });

  it('F3: a turn appended through the HTTP API reaches afterTurn (local invoke) and rotates the oversized session once', async () => {
    const tenant = `t-${randomUUID()}`;
    const key = (await new ApiKeyStore({ client: ddb, tableName }).create(tenant)).key;
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${svc.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const created = await call('POST', '/sessions', { source: 'e2e-queue' });
    expect(created.status).toBe(201);
    const sessionId = (created.body.session as { sessionId: string }).sessionId;
    const appended = await call('POST', `/sessions/${sessionId}/messages`, { messages: transcript(12) });
    expect(appended.status).toBe(200);

    const ref = { tenantId: tenant, sessionId };
    await expect.poll(async () => (await store.children(ref)).length, { timeout: 60_000, interval: 250 }).toBe(1);
    const lineage = await call('GET', `/sessions/${sessionId}/lineage`);
    expect(lineage.body.tip).toBe((await store.children(ref))[0]?.sessionId);
  });

  it('F3/A2: a responses session appended through the API is rotated by afterTurn into a responses child with no dangling call', async () => {
    const tenant = `t-${randomUUID()}`;
    const api = apiClient(svc.baseUrl, (await new ApiKeyStore({ client: ddb, tableName }).create(tenant)).key);
    const sessionId: string = (await api('POST', '/sessions', { body: { format: 'responses' } })).body.session.sessionId;
    const items = longResponsesTranscript(10);
    expect((await api('POST', `/sessions/${sessionId}/messages`, { body: { messages: items } })).status).toBe(200);

    const ref = { tenantId: tenant, sessionId };
    await expect.poll(async () => (await store.children(ref)).length, { timeout: 60_000, interval: 250 }).toBe(1);
    const child = (await store.children(ref))[0]!;
    expect(child.format).toBe('responses');
    const live = (await api('GET', `/sessions/${child.sessionId}/messages`)).body.messages as Item[];
    const pairing = pairCalls(live, adapterFor('responses'));
    expect([pairing.unansweredCallIds, pairing.orphanResultIds]).toEqual([[], []]);
    expect(live.length).toBeLessThan(items.length);
  });

  it('S1/S2: the sweep function cleans an attempt left by a killed invocation and removes its orphan messages', async () => {
    const ref = await seed();
    const leaseExpiresAt = Date.now() + 1000;
    const killed = await killedRotation({ endpoint, tableName, ref, leaseExpiresAt });
    const pending = { tenantId: ref.tenantId, sessionId: killed.attempt.pendingChildId };
    expect(await messageItemCount(ddb, tableName, pending)).toBe(killed.orphanMessages);
    await expect.poll(() => Date.now() > leaseExpiresAt + 50, { timeout: 10_000, interval: 100 }).toBe(true);

    const scheduled = {
      version: '0',
      id: randomUUID(),
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      time: new Date().toISOString(),
      detail: {},
    };
    const result = await svc.invoke('sweep', scheduled);
    expect(result).toMatchObject({ expiredAttemptsCleaned: 1, orphanMessagesRemoved: killed.orphanMessages, forksFound: 0 });
    expect((await store.getSession(ref))?.attempt).toBeUndefined();
    expect(await messageItemCount(ddb, tableName, pending)).toBe(0);
  });
});
