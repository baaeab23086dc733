// H2: branches at the store, against DynamoDB Local. A branch is a new conversation whose root holds
// a copy of the source session's items 1..n as stored (summaries included) and a typed
// `branchedFrom` edge; the source is never written; a branch is no rotation child (I1, S2); the copy
// lands whole or not at all, in one transaction or beyond it by the write-first path (A7). The new
// DynamoDB conditions (conditions.ts: branchSourceCondition, CONVERSATION_ID_FREE, NOT_A_LEGACY_ROOT)
// are pinned here: each test below fails when its condition alone is removed (checked).
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { BranchPointError, ConversationExistsError, type BranchInput } from '../../../lib/lineage/branches.js';
import { conversationKey } from '../../../lib/lineage/dynamo/conversation-row.js';
import { sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import type { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { append, begin, commitInput, doc, dynamoClient, makeStore, msg, msgs, putRawMeta, rawItems, tableName } from './support.js';

const raw = dynamoClient();
const clients: DynamoDBClient[] = [raw];
afterAll(() => clients.forEach((c) => c.destroy()));

const respond = () => ({ status: 201, body: { ok: true } });

/** A conversation (PUT) with `items`; its live session. */
async function conversation(store: DynamoLineageStore, items = msgs(1, 6)): Promise<{ id: string; ref: SessionRef }> {
  const tenantId = `t-${randomUUID()}`;
  const id = `c-${randomUUID().slice(0, 8)}`;
  const r = await store.ensureConversation({ tenantId, conversationId: id }, false);
  const ref = { tenantId, sessionId: r.conversation.liveSessionId };
  if (items.length) await append(store, ref, items);
  return { id, ref };
}

function branch(store: DynamoLineageStore, from: SessionRef, conversationId: string, more: Partial<BranchInput> = {}) {
  return store.branchConversation({ from, conversationId, liveOnly: true, respond, ...more });
}

async function branched(store: DynamoLineageStore, from: SessionRef, conversationId: string, more: Partial<BranchInput> = {}) {
  const r = await branch(store, from, conversationId, more);
  if (r.replayed) throw new Error('unexpected replay');
  return r;
}

/** A store whose client runs `before` once, just before the first transaction `match` accepts. */
function scripted(match: (input: { TransactItems?: unknown[] }) => boolean, before: () => Promise<unknown>, opts = {}) {
  const client = dynamoClient();
  clients.push(client);
  let done = false;
  client.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as { TransactItems?: unknown[] };
      if (!done && match(input)) {
        done = true;
        await before();
      }
      return next(args);
    },
    { step: 'initialize', name: 'scripted' },
  );
  return makeStore(client, opts);
}

const isBranchCommit = (i: { TransactItems?: unknown[] }) =>
  !!i.TransactItems?.some((t) => (t as { Put?: { Item?: { sk?: string; branchedFrom?: unknown } } }).Put?.Item?.branchedFrom !== undefined);

describe('H2: what a branch holds', () => {
  it('H2: a branch from the middle holds the live items 1..n as stored (an in-place summary included), its root and conversation carry branchedFrom, the source is untouched', async () => {
    const store = makeStore();
    const { id, ref } = await conversation(store);
    // In place: the live generation starts with a summary, then more items land after it.
    const begun = await begin(store, ref);
    await store.commitInPlace(ref, begun, commitInput([{ role: 'user', content: 'SUMMARY so far' }, msg(6)]));
    await append(store, ref, [{ role: 'assistant', content: [{ type: 'text', text: 'parts' }], extra: { kept: 1 } }, msg(8), msg(9)]);
    const before = await store.readAll(ref);
    const sourceRecord = await store.getSession(ref);
    expect(before).toHaveLength(5);

    const newId = `b-${randomUUID().slice(0, 8)}`;
    const r = await branched(store, ref, newId, { fromSeq: 3 });
    const edge = { conversationId: id, sessionId: ref.sessionId, seq: 3 };
    expect(r.conversation).toMatchObject({ conversationId: newId, sessions: 1, branchedFrom: edge, format: 'chat' });
    expect(r.session).toMatchObject({ messageCount: 3, branchedFrom: edge });
    expect(r.session.parentSessionId).toBeUndefined();
    const root = { tenantId: ref.tenantId, sessionId: r.conversation.rootSessionId };
    expect(await store.readAll(root)).toEqual(before.slice(0, 3));
    expect(await store.getConversation(ref.tenantId, newId)).toMatchObject({ branchedFrom: edge, liveSessionId: root.sessionId });
    expect((await store.lineage(root)).map((s) => s.branchedFrom)).toEqual([edge]);
    // The source: same items, same record (no version move: nothing wrote it).
    expect(await store.readAll(ref)).toEqual(before);
    expect(await store.getSession(ref)).toEqual(sourceRecord);
    // The branch is a conversation of its own: it takes appends without touching the source.
    await append(store, root, [msg(100)]);
    expect((await store.readAll(root)).at(-1)).toEqual(msg(100));
    expect(await store.readAll(ref)).toEqual(before);
  });

  it('H2: without fromSeq the branch holds every item; an empty conversation branches empty; fromSeq past the count is from_seq_out_of_range', async () => {
    const store = makeStore();
    const { ref } = await conversation(store);
    const all = await branched(store, ref, `b-${randomUUID().slice(0, 8)}`);
    expect(all.session.messageCount).toBe(6);
    expect(all.conversation.branchedFrom?.seq).toBe(6);
    expect(await store.readAll({ tenantId: ref.tenantId, sessionId: all.session.sessionId })).toEqual(msgs(1, 6));
    const err = await branch(store, ref, `b-${randomUUID().slice(0, 8)}`, { fromSeq: 7 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BranchPointError);
    expect(err).toMatchObject({ status: 400, code: 'from_seq_out_of_range', details: { messageCount: 6 } });
    const empty = await conversation(store, []);
    const none = await branched(store, empty.ref, `b-${randomUUID().slice(0, 8)}`);
    expect(none.session.messageCount).toBe(0);
  });

  it('H2: positions, not sequence numbers: after a pop and an append (a skipped seq) fromSeq counts items as a client reads them', async () => {
    const store = makeStore();
    const { ref } = await conversation(store);
    await store.popLast(ref);
    await append(store, ref, [msg(60)]);
    const r = await branched(store, ref, `b-${randomUUID().slice(0, 8)}`, { fromSeq: 6 });
    expect(await store.readAll({ tenantId: ref.tenantId, sessionId: r.session.sessionId })).toEqual([...msgs(1, 5), msg(60)]);
  });
});

describe('H2: branches are not rotation children (I1, S2)', () => {
  it('H2: a branch plus a rotation of the source is one child plus one branch, not a fork', async () => {
    const store = makeStore();
    const since = Date.now() - 1000;
    const { ref } = await conversation(store);
    const b = await branched(store, ref, `b-${randomUUID().slice(0, 8)}`, { fromSeq: 4 });
    const begun = await begin(store, ref);
    const rotated = await store.commitRotation(ref, begun, commitInput([{ role: 'user', content: 'SUMMARY' }]));
    const children = await store.children(ref);
    expect(children.map((c) => c.sessionId)).toEqual([rotated.child.sessionId]);
    const mine = (forks: { parent: SessionRef }[]) => forks.filter((f) => f.parent.tenantId === ref.tenantId);
    expect(mine(await store.findRecentForks(since))).toEqual([]);
    expect(mine(await store.findAllForks())).toEqual([]);
    // The branch's root has no parent link, and the source's lineage does not list it.
    expect((await store.lineage({ tenantId: ref.tenantId, sessionId: b.session.sessionId })).map((s) => s.sessionId)).toEqual([
      b.session.sessionId,
    ]);
    expect((await store.lineage(ref)).map((s) => s.sessionId)).toEqual([ref.sessionId, rotated.child.sessionId]);
  });
});

describe('H2: from an ended session (the session-route twin)', () => {
  it('H2: a rotated parent branches from its own items (immutable); the conversation form follows the live tip instead', async () => {
    const store = makeStore();
    const { id, ref } = await conversation(store);
    const begun = await begin(store, ref);
    const rotated = await store.commitRotation(ref, begun, commitInput([{ role: 'user', content: 'SUMMARY' }]));
    const fromParent = await branched(store, ref, `b-${randomUUID().slice(0, 8)}`, { liveOnly: false, fromSeq: 2 });
    expect(fromParent.conversation.branchedFrom).toEqual({ conversationId: id, sessionId: ref.sessionId, seq: 2 });
    expect(await store.readAll({ tenantId: ref.tenantId, sessionId: fromParent.session.sessionId })).toEqual(msgs(1, 2));
    const err = await branch(store, ref, `b-${randomUUID().slice(0, 8)}`).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'session_ended', liveSessionId: rotated.child.sessionId });
  });
});

describe('H2: the copy is whole or nothing (A7)', () => {
  it('H2: a copy beyond one transaction is written first, listed in a task the commit takes away: items deep-equal, no task or chunk left', async () => {
    // 60 KB per transaction: 12 items of 20 KB need the write-first path.
    const store = makeStore(undefined, { transactionBytes: 60_000 });
    const big = Array.from({ length: 12 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${i} ${'x'.repeat(20_000)}` }));
    const { ref } = await conversation(store, big);
    const r = await branched(store, ref, `b-${randomUUID().slice(0, 8)}`);
    const root = { tenantId: ref.tenantId, sessionId: r.session.sessionId };
    expect(await store.readAll(root)).toEqual(big);
    const left = (await rawItems(raw, root)).map((i) => String(i.sk));
    expect(left.filter((sk) => sk.startsWith('TASK#') || sk.startsWith('PART#'))).toEqual([]);
  });

  it('H2: a big copy refused at its commit (the id is taken) leaves no row behind', async () => {
    const store = makeStore(undefined, { transactionBytes: 60_000 });
    const big = Array.from({ length: 12 }, (_, i) => ({ role: 'user', content: `${i} ${'y'.repeat(20_000)}` }));
    const { id, ref } = await conversation(store, big);
    const err = await branch(store, ref, id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConversationExistsError);
    // Every pk of the tenant: the source's session and conversation, nothing else.
    const out = await doc(raw).send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': sessionPk(ref) },
      }),
    );
    expect(out.Items?.length).toBeGreaterThan(0);
    // Every page: the table is shared, and a Scan page reads 1 MB before its filter applies.
    const { ScanCommand } = await import('@aws-sdk/lib-dynamodb');
    const pks = new Set<string>();
    let start: Record<string, unknown> | undefined;
    do {
      const scan = await doc(raw).send(
        new ScanCommand({
          TableName: tableName(),
          FilterExpression: 'begins_with(pk, :t)',
          ExpressionAttributeValues: { ':t': `T#${ref.tenantId}#` },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const i of scan.Items ?? []) pks.add(String(i.pk));
      start = scan.LastEvaluatedKey;
    } while (start);
    expect([...pks].sort()).toEqual([conversationKey(ref.tenantId, id).pk, sessionPk(ref)].sort());
  });
});

describe('H2: the conditions of the branch transaction (pinned)', () => {
  it('H2 (branchSourceCondition): a pop between the read of the items and the commit sends the branch round again: it never holds the popped item', async () => {
    const plain = makeStore();
    const { ref } = await conversation(plain);
    const store = scripted(isBranchCommit, () => plain.popLast(ref));
    const r = await branched(store, ref, `b-${randomUUID().slice(0, 8)}`);
    expect(r.session.messageCount).toBe(5);
    expect(await store.readAll({ tenantId: ref.tenantId, sessionId: r.session.sessionId })).toEqual(msgs(1, 5));
  });

  it('H2 (branchSourceCondition): a source deleted between the read and the commit is not branched', async () => {
    const plain = makeStore();
    const { id, ref } = await conversation(plain);
    const store = scripted(isBranchCommit, () => plain.deleteConversation(ref.tenantId, id));
    const newId = `b-${randomUUID().slice(0, 8)}`;
    await expect(branch(store, ref, newId)).rejects.toMatchObject({ status: 404 });
    expect(await plain.getConversation(ref.tenantId, newId)).toBeNull();
  });

  it('H2 (CONVERSATION_ID_FREE): a branch onto an existing conversation is 409 conversation_exists and leaves that conversation as it was', async () => {
    const store = makeStore();
    const { ref } = await conversation(store);
    const other = await store.ensureConversation({ tenantId: ref.tenantId, conversationId: `o-${randomUUID().slice(0, 8)}` }, false);
    const err = await branch(store, ref, other.conversation.conversationId).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 409, code: 'conversation_exists' });
    expect(await store.getConversation(ref.tenantId, other.conversation.conversationId)).toEqual(other.conversation);
  });

  it('H2 (NOT_A_LEGACY_ROOT): the id of a chain from before conversations (a root session without a record) is taken too', async () => {
    const store = makeStore();
    const { ref } = await conversation(store);
    const legacy = { tenantId: ref.tenantId, sessionId: `legacy-${randomUUID().slice(0, 8)}` };
    await putRawMeta(raw, legacy, { generation: 0, messageCount: 0, lastSeq: 0, tokenEstimate: 0, version: 1 });
    const err = await branch(store, ref, legacy.sessionId).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 409, code: 'conversation_exists' });
    // GET adopts that chain as the conversation of its id: the one from before, not a branch.
    expect((await store.getConversation(ref.tenantId, legacy.sessionId))?.rootSessionId).toBe(legacy.sessionId);
  });
});

describe('H2: a keyed branch (A3)', () => {
  it('H2: two identical keyed branches racing make one branch and answer alike; the same key with another body is idempotency_key_reused', async () => {
    const store = makeStore();
    const { id, ref } = await conversation(store);
    const newId = `b-${randomUUID().slice(0, 8)}`;
    const root = (await store.getConversation(ref.tenantId, id))!.rootSessionId;
    const idempotency = { key: 'k1', requestHash: 'h1', conversation: { conversationId: id, rootSessionId: root } };
    const answer = (c: { rootSessionId: string }) => ({ status: 201, body: { root: c.rootSessionId } });
    const [a, b] = await Promise.all([
      branch(store, ref, newId, { idempotency, respond: answer }),
      branch(makeStore(), ref, newId, { idempotency, respond: answer }),
    ]);
    const made = (await store.getConversation(ref.tenantId, newId))!.rootSessionId;
    const bodies = [a, b].map((r) => (r.replayed ? r.response.body : { root: r.conversation.rootSessionId }));
    expect(bodies).toEqual([{ root: made }, { root: made }]);
    expect([a.replayed, b.replayed].sort()).toEqual([false, true]);
    const again = await branch(store, ref, newId, { idempotency, respond: answer });
    expect(again).toEqual({ replayed: true, response: { status: 201, body: { root: made } } });
    const reused = await branch(store, ref, `x-${newId}`, { idempotency: { ...idempotency, requestHash: 'h2' } }).catch((e: unknown) => e);
    expect(reused).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
    const reusedOutOfRange = await branch(store, ref, `y-${newId}`, {
      fromSeq: 99,
      idempotency: { ...idempotency, requestHash: 'h3' },
    }).catch((e: unknown) => e);
    expect(reusedOutOfRange).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
  });
});
