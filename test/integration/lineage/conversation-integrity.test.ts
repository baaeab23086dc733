// Issue 28 (items 2, 3, 5, 6, 7): a conversation is whole or gone. Each test reproduces a defect
// found in review on the store, against DynamoDB Local, with another "container" (its own store,
// its own record cache) moving the conversation first:
// - a keyed append replayed from a deleted incarnation, or from a deleted session (A3, K3);
// - a legacy chain adopted between a begin and its rotation's commit (K2);
// - the live session deleted on its own, leaving the conversation's id stuck (K3);
// - a delete that did not find a legacy chain, or lost the chain behind the client's own deletes (K1, K3).
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DeleteCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { conversationKey } from '../../../lib/lineage/dynamo/conversation-row.js';
import { sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import { ConversationNotFoundError, SessionNotFoundError, StoreRetryableError } from '../../../lib/lineage/errors.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { ConversationRecord, IdempotencyInput } from '../../../lib/lineage/types.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { RoundTrips } from '../../support/round-trips.js';
import { append, begin, commitInput, doc, dynamoClient, makeStore, msg, msgs, rawSet, tableName } from './support.js';

const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));
/** A container: its own client (counted) and store (its own record cache). */
function container() {
  const client = dynamoClient();
  clients.push(client);
  return { client, store: makeStore(client), trips: new RoundTrips().watchDynamo(client) };
}
const ops = async (trips: RoundTrips, run: () => Promise<unknown>) => (await trips.during(run)).calls.map((c) => c.op);

const tenant = () => `t-${randomUUID().slice(0, 8)}`;
const respond = () => ({ status: 200, body: { first: true } });

function keyed(conv: ConversationRecord, key = 'k-1'): IdempotencyInput {
  return { key, requestHash: 'h', conversation: { conversationId: conv.conversationId, rootSessionId: conv.rootSessionId } };
}

async function newConversation(store: ReturnType<typeof makeStore>, tenantId = tenant(), id = `c-${randomUUID().slice(0, 6)}`) {
  const r = await store.ensureConversation({ tenantId, conversationId: id }, false);
  return r.conversation;
}

const liveRef = (c: ConversationRecord): SessionRef => ({ tenantId: c.tenantId, sessionId: c.liveSessionId });

async function rotate(store: ReturnType<typeof makeStore>, ref: SessionRef): Promise<SessionRef> {
  await append(store, ref, msgs(1, 2));
  const r = await store.commitRotation(ref, await begin(store, ref), commitInput([msg(2)]));
  return { tenantId: ref.tenantId, sessionId: r.child.sessionId };
}

/** Strips a chain to its shape from before conversations: no CONV record, no conversationId on any META. */
async function asLegacy(client: DynamoDBClient, tenantId: string, rootId: string, sessions: string[]): Promise<void> {
  await doc(client).send(new DeleteCommand({ TableName: tableName(), Key: conversationKey(tenantId, rootId) }));
  for (const sessionId of sessions) {
    await doc(client).send(
      new UpdateCommand({
        TableName: tableName(),
        Key: { pk: sessionPk({ tenantId, sessionId }), sk: 'META' },
        UpdateExpression: 'REMOVE conversationId',
      }),
    );
  }
}

/** A legacy chain root → child (POST /sessions, rotated once, from before conversations). */
async function legacyChain(store: ReturnType<typeof makeStore>, client: DynamoDBClient) {
  const tenantId = tenant();
  const s = await store.createSession({ tenantId, format: 'chat' });
  if (s.replayed) throw new Error('replay');
  const root = { tenantId, sessionId: s.session.sessionId };
  const child = await rotate(store, root);
  await asLegacy(client, tenantId, root.sessionId, [root.sessionId, child.sessionId]);
  return { tenantId, root, child };
}

async function conversationKeys(client: DynamoDBClient, tenantId: string, conversationId: string): Promise<string[]> {
  const out = await doc(client).send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :idem)',
      ExpressionAttributeValues: { ':pk': conversationKey(tenantId, conversationId).pk, ':idem': 'IDEM#' },
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []).map((i) => String(i.sk));
}

describe('A3 K3: a keyed append is replayed only by the incarnation and session that exist now (issue 28, item 2)', () => {
  for (const warmth of ['warm', 'cold'] as const) {
    it(`A3 K3: ${warmth}: a keyed conversation append from a container that remembers a deleted incarnation is not replayed from it`, async () => {
      const a = container();
      const b = container();
      const first = await newConversation(a.store);
      const ref = liveRef(first);
      await a.store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency: keyed(first), respond });
      // Container B deletes the conversation and a PUT creates it again.
      await b.store.deleteConversation(first.tenantId, first.conversationId);
      const again = await newConversation(b.store, first.tenantId, first.conversationId);
      expect(again.rootSessionId).not.toBe(first.rootSessionId);
      // The same keyed request reaches A with its old tip (warm: its record cache still says live).
      const at = warmth === 'warm' ? a.store : container().store;
      const retry = at.appendItems(ref, { prepare: asIs([msg(1)]), idempotency: keyed(first), respond });
      await expect(retry).rejects.toBeInstanceOf(SessionNotFoundError);
      // On the conversation as it is now, the key is new: it lands (the route goes there, conversation-integrity API test).
      const landed = await at.appendItems(liveRef(again), { prepare: asIs([msg(1)]), idempotency: keyed(again), respond });
      expect(landed.replayed).toBe(false);
      expect(await b.store.readAll(liveRef(again))).toEqual([msg(1)]);
    });
  }

  it('A3 K3: a tip whose session outlived its conversation record answers from the record, not the old keys (root checked on the replay path)', async () => {
    const a = container();
    const first = await newConversation(a.store);
    const ref = liveRef(first);
    await a.store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency: keyed(first), respond });
    // The record alone goes (as an interrupted delete from before issue 28 left it) and the id is created again.
    await doc(a.client).send(new DeleteCommand({ TableName: tableName(), Key: conversationKey(first.tenantId, first.conversationId) }));
    await newConversation(a.store, first.tenantId, first.conversationId);
    const { result, calls } = await a.trips.during(() =>
      a.store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency: keyed(first), respond }).catch((e: unknown) => e),
    );
    expect(result).toBeInstanceOf(SessionNotFoundError);
    // P5: the replay path pays the record's read; the warm transaction stays the only other call.
    expect(calls.map((c) => c.op)).toEqual(['TransactWriteItemsCommand', 'GetItemCommand']);
  });

  it('P5 A3: a replay by the conversation that exists now still answers the first response (one call more, on the replay path only)', async () => {
    const a = container();
    const conv = await newConversation(a.store);
    const ref = liveRef(conv);
    expect(await ops(a.trips, () => a.store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency: keyed(conv), respond }))).toEqual([
      'TransactWriteItemsCommand',
    ]);
    const { result, calls } = await a.trips.during(() =>
      a.store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency: keyed(conv), respond }),
    );
    expect(result).toEqual({ replayed: true, response: { status: 200, body: { first: true } } });
    expect(calls.map((c) => c.op)).toEqual(['TransactWriteItemsCommand', 'GetItemCommand']);
    expect(await a.store.readAll(ref)).toEqual([msg(1)]);
  });

  for (const warmth of ['warm', 'cold'] as const) {
    it(`A3 A6: ${warmth}: a keyed retry on a deleted session answers 404, never the first response`, async () => {
      const a = container();
      const conv = await newConversation(a.store);
      const ref = liveRef(conv);
      const idempotency = { key: 'k-s', requestHash: 'h' };
      await a.store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency, respond });
      // Deleted by another container, its purge not run yet: the key's record is still there.
      await rawSet(a.client, ref, 'deletedAt', new Date().toISOString());
      const at = warmth === 'warm' ? a.store : container().store;
      await expect(at.appendItems(ref, { prepare: asIs([msg(1)]), idempotency, respond })).rejects.toBeInstanceOf(SessionNotFoundError);
    });
  }

  it('A3 K3: deleting a conversation removes its Idempotency-Key records', async () => {
    const a = container();
    const conv = await newConversation(a.store);
    await a.store.appendItems(liveRef(conv), { prepare: asIs([msg(1)]), idempotency: keyed(conv, 'k-1'), respond });
    await a.store.appendItems(liveRef(conv), { prepare: asIs([msg(2)]), idempotency: keyed(conv, 'k-2'), respond });
    expect(await conversationKeys(a.client, conv.tenantId, conv.conversationId)).toHaveLength(2);
    await a.store.deleteConversation(conv.tenantId, conv.conversationId);
    expect(await conversationKeys(a.client, conv.tenantId, conv.conversationId)).toEqual([]);
  });
});

describe('K2: a legacy chain adopted during a compaction (issue 28, item 3)', () => {
  it('K2: begin, then the adoption, then the rotation commits: the conversation and the child name each other', async () => {
    const a = container();
    const { tenantId, root, child } = await legacyChain(a.store, a.client);
    await append(a.store, child, msgs(3, 4));
    const begun = await begin(a.store, child);
    // Another container's first use of the conversation adopts the chain under the attempt.
    expect(await container().store.getConversation(tenantId, root.sessionId)).toMatchObject({ liveSessionId: child.sessionId });
    const r = await a.store.commitRotation(child, begun, commitInput([msg(4)]));
    expect(r.child.conversationId).toBe(root.sessionId);
    expect(await a.store.getConversation(tenantId, root.sessionId)).toMatchObject({ liveSessionId: r.child.sessionId, sessions: 3 });
  });
});

describe('K3: a conversation whose live session is deleted is deleted (issue 28, item 5)', () => {
  it('K3: deleting the live session deletes the conversation: every session 404, the id free for a new one', async () => {
    const a = container();
    const conv = await newConversation(a.store);
    const child = await rotate(a.store, liveRef(conv));
    await a.store.deleteSession(child);
    expect(await a.store.getConversation(conv.tenantId, conv.conversationId)).toBeNull();
    for (const sessionId of [conv.rootSessionId, child.sessionId]) {
      expect(await a.store.getSession({ tenantId: conv.tenantId, sessionId })).toBeNull();
    }
    const again = await a.store.ensureConversation({ tenantId: conv.tenantId, conversationId: conv.conversationId }, false);
    expect(again.created).toBe(true);
    await a.store.appendItems(liveRef(again.conversation), { prepare: asIs([msg(1)]) });
    expect(await a.store.readAll(liveRef(again.conversation))).toEqual([msg(1)]);
  });

  it('A6 K3: deleting an ended session of a conversation deletes only that session; the conversation goes on', async () => {
    const a = container();
    const conv = await newConversation(a.store);
    const child = await rotate(a.store, liveRef(conv));
    await a.store.deleteSession({ tenantId: conv.tenantId, sessionId: conv.rootSessionId });
    expect(await a.store.getSession({ tenantId: conv.tenantId, sessionId: conv.rootSessionId })).toBeNull();
    expect(await a.store.getConversation(conv.tenantId, conv.conversationId)).toMatchObject({ liveSessionId: child.sessionId });
    expect(await a.store.getSession(child)).not.toBeNull();
  });

  it('A6: deleting a deleted or unknown session is still not found', async () => {
    const a = container();
    const conv = await newConversation(a.store);
    await a.store.deleteSession(liveRef(conv));
    await expect(a.store.deleteSession(liveRef(conv))).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(a.store.deleteSession({ tenantId: conv.tenantId, sessionId: 'nope' })).rejects.toBeInstanceOf(SessionNotFoundError);
  });
});

describe('K1 K3: a delete finds what GET finds and follows the chain through tombstones (issue 28, items 6, 7)', () => {
  it('K1 K3: deleting a legacy chain never used as a conversation deletes it (the lookup of GET)', async () => {
    const a = container();
    const { tenantId, root, child } = await legacyChain(a.store, a.client);
    await a.store.deleteConversation(tenantId, root.sessionId);
    for (const ref of [root, child]) expect(await a.store.getSession(ref)).toBeNull();
    expect(await a.store.getConversation(tenantId, root.sessionId)).toBeNull();
    await expect(a.store.deleteConversation(tenantId, root.sessionId)).rejects.toBeInstanceOf(ConversationNotFoundError);
  });

  it('K3: chain R→M→T with T and R deleted before the conversation: the delete removes M too', async () => {
    const a = container();
    const conv = await newConversation(a.store);
    const m = await rotate(a.store, liveRef(conv));
    const t = await rotate(a.store, m);
    // The client deleted T, then R, one by one (tombstones, as DELETE /sessions/{id} left them before issue 28).
    await rawSet(a.client, t, 'deletedAt', new Date().toISOString());
    await rawSet(a.client, { tenantId: conv.tenantId, sessionId: conv.rootSessionId }, 'deletedAt', new Date().toISOString());
    expect(await a.store.getSession(m)).not.toBeNull();
    await a.store.deleteConversation(conv.tenantId, conv.conversationId);
    expect(await a.store.getSession(m)).toBeNull();
    expect(await a.store.getConversation(conv.tenantId, conv.conversationId)).toBeNull();
  });
});

/**
 * Makes `conv` (one fresh root) a chain of `n` sessions as rotations leave them (ended parents
 * linked to their children, tip pointers on the root), written directly: fifty compactions take a
 * minute on a loaded machine, and only the links matter here.
 */
async function longChain(client: DynamoDBClient, conv: ConversationRecord, n: number): Promise<string[]> {
  const { tenantId } = conv;
  const ids = [conv.rootSessionId, ...Array.from({ length: n - 1 }, () => randomUUID())];
  const at = new Date().toISOString();
  const metas = ids.map((sessionId, i) => ({
    pk: sessionPk({ tenantId, sessionId }),
    sk: 'META',
    tenantId,
    sessionId,
    conversationId: conv.conversationId,
    format: 'chat',
    createdAt: at,
    generation: 0,
    fenceCounter: 0,
    messageCount: 0,
    lastSeq: 0,
    tokenEstimate: 0,
    version: 2,
    ...(i > 0 ? { parentSessionId: ids[i - 1], rootSessionId: ids[0] } : { tipSessionId: ids[n - 1] }),
    ...(i < n - 1 ? { childSessionId: ids[i + 1], endedAt: at, endReason: 'compression' } : {}),
  }));
  for (let i = 0; i < metas.length; i += 25) {
    await doc(client).send(
      new BatchWriteCommand({ RequestItems: { [tableName()]: metas.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) } }),
    );
  }
  await doc(client).send(
    new UpdateCommand({
      TableName: tableName(),
      Key: conversationKey(tenantId, conv.conversationId),
      UpdateExpression: 'SET liveSessionId = :live, sessions = :n',
      ExpressionAttributeValues: { ':live': ids[n - 1], ':n': n },
    }),
  );
  return ids;
}

describe('K3: a conversation longer than one transaction whose delete loses every round (issue 28, suspected)', () => {
  it('K3: the delete answers retryable, the conversation stays usable on its live session, and the retried delete removes every session', async () => {
    const other = container();
    const conv = await newConversation(other.store);
    // 51 sessions: the two oldest are tombstoned in a transaction of their own before the final one.
    const ids = await longChain(other.client, conv, 51);
    let live: SessionRef = { tenantId: conv.tenantId, sessionId: ids.at(-1)! };
    // A rotation lands before each of the final transaction's rounds: every round loses.
    const client = dynamoClient();
    clients.push(client);
    let rotations = 0;
    client.middlewareStack.add(
      (next) => async (args) => {
        const entries = (args.input as { TransactItems?: { Delete?: { Key?: { sk?: string } } }[] }).TransactItems;
        if (entries?.[0]?.Delete?.Key?.sk === 'CONV') {
          live = await rotate(other.store, live);
          ids.push(live.sessionId);
          rotations++;
        }
        return next(args);
      },
      { step: 'initialize', name: 'rotateBeforeDelete' },
    );
    const err = await makeStore(client)
      .deleteConversation(conv.tenantId, conv.conversationId)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreRetryableError);
    expect(rotations).toBeGreaterThan(1);
    // What it did: ended sessions deleted, as asked; the conversation and its live session go on.
    expect(await other.store.getConversation(conv.tenantId, conv.conversationId)).toMatchObject({ liveSessionId: live.sessionId });
    await other.store.appendItems(live, { prepare: asIs([msg(9)]) });
    // The client retries its DELETE (a 503 is retryable): it finishes the chain, tombstones and all.
    await other.store.deleteConversation(conv.tenantId, conv.conversationId);
    expect(await other.store.getConversation(conv.tenantId, conv.conversationId)).toBeNull();
    for (const sessionId of ids) expect(await other.store.getSession({ tenantId: conv.tenantId, sessionId })).toBeNull();
  }, 180_000);
});
