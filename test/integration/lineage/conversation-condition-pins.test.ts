// Issue 28: conditions of keys and conversations no test pinned. Each test puts a rival write
// between our read and our write, deterministically (client middleware runs it just before the
// request it names; no sleeps), and fails when the clause it names is removed alone (checked):
// - IDEMPOTENCY_CONDITION's `OR #expiresAt < :nowSec` (conditions.ts);
// - the conversation delete's `#liveSessionId = :live` (conversations.ts delete);
// - the legacy adoption's `attribute_not_exists(#conversationId)` (conversations.ts adoptLegacyChain).
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { conversationKey } from '../../../lib/lineage/dynamo/conversation-row.js';
import { appendIdempotencyKey, sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { append, begin, commitInput, doc, dynamoClient, makeStore, msg, msgs, newSession, rawSet, tableName } from './support.js';

const raw = dynamoClient();
const clients: DynamoDBClient[] = [raw];
afterAll(() => clients.forEach((c) => c.destroy()));

interface Input {
  TransactItems?: { Delete?: { Key?: { sk?: string } }; Put?: { Item?: { sk?: string } } }[];
}
type Match = (input: Input) => boolean;

/** A store whose client runs `before` once, just before the first request `match` accepts. */
function scripted(match: Match, before: () => Promise<unknown>) {
  const client = dynamoClient();
  clients.push(client);
  let done = false;
  client.middlewareStack.add(
    (next) => async (args) => {
      if (!done && match(args.input as Input)) {
        done = true;
        await before();
      }
      return next(args);
    },
    { step: 'initialize', name: 'scripted' },
  );
  return makeStore(client);
}

const touchesConv =
  (kind: 'Delete' | 'Put'): Match =>
  (i) =>
    !!i.TransactItems?.some((t) => (kind === 'Delete' ? t.Delete?.Key?.sk : t.Put?.Item?.sk) === 'CONV');

describe('A3: a key past its retention that TTL has not removed yet (IDEMPOTENCY_CONDITION, `OR #expiresAt < :nowSec`)', () => {
  it('A3: the same key after its retention is a new request: it appends again', async () => {
    const store = makeStore();
    const ref = await newSession(store, []);
    const idempotency = { key: 'k-old', requestHash: 'h' };
    const respond = () => ({ status: 200, body: { n: 1 } });
    await store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency, respond });
    // A day later: the record is past its expiry, still stored (DynamoDB's TTL deletes lag up to days).
    await doc(raw).send(
      new UpdateCommand({
        TableName: tableName(),
        Key: appendIdempotencyKey(ref, 'k-old'),
        UpdateExpression: 'SET expiresAt = :past',
        ExpressionAttributeValues: { ':past': Math.floor(Date.now() / 1000) - 60 },
      }),
    );
    const again = await store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency, respond });
    expect(again.replayed).toBe(false);
    expect(await store.readAll(ref)).toEqual([msg(1), msg(1)]);
    // And the key is remembered afresh: its next retry replays.
    expect((await store.appendItems(ref, { prepare: asIs([msg(1)]), idempotency, respond })).replayed).toBe(true);
  });
});

describe("K3: a rotation between a conversation delete's read and its transaction (`#liveSessionId = :live`)", () => {
  it('K3: the new child is deleted with the rest: no session of the chain outlives its record', async () => {
    const other = makeStore();
    const tenantId = `t-${randomUUID().slice(0, 8)}`;
    const { conversation } = await other.ensureConversation({ tenantId, conversationId: 'c' }, false);
    const root: SessionRef = { tenantId, sessionId: conversation.rootSessionId };
    await append(other, root, msgs(1, 4));
    let child: SessionRef | undefined;
    const store = scripted(touchesConv('Delete'), async () => {
      const r = await other.commitRotation(root, await begin(other, root), commitInput(msgs(3, 4)));
      child = { tenantId, sessionId: r.child.sessionId };
    });
    await store.deleteConversation(tenantId, 'c');
    expect(child).toBeDefined();
    expect(await other.getSession(child!)).toBeNull();
    expect(await other.getSession(root)).toBeNull();
    expect(await other.getConversation(tenantId, 'c')).toBeNull();
  });
});

describe('K1: a tip that came to name a conversation while a legacy chain was adopted (`attribute_not_exists(#conversationId)`)', () => {
  it('K1: the adoption never re-labels a session of another conversation: no record is written for the root', async () => {
    const other = makeStore();
    const tenantId = `t-${randomUUID().slice(0, 8)}`;
    const s = await other.createSession({ tenantId });
    if (s.replayed) throw new Error('replay');
    const root: SessionRef = { tenantId, sessionId: s.session.sessionId };
    // As a chain from before conversations was stored: no record, no conversation id.
    await doc(raw).send(new DeleteCommand({ TableName: tableName(), Key: conversationKey(tenantId, root.sessionId) }));
    await doc(raw).send(
      new UpdateCommand({ TableName: tableName(), Key: { pk: sessionPk(root), sk: 'META' }, UpdateExpression: 'REMOVE conversationId' }),
    );
    // Between the adoption's read of the chain and its transaction, the tip comes to name another conversation.
    const store = scripted(touchesConv('Put'), () => rawSet(raw, root, 'conversationId', 'other'));
    expect(await store.getConversation(tenantId, root.sessionId)).toBeNull();
    expect((await other.getSession(root))?.conversationId).toBe('other');
    expect(await other.getConversation(tenantId, root.sessionId)).toBeNull();
  });
});
