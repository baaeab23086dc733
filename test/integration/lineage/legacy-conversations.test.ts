// K1 for chains made before conversations existed: their sessions carry no conversation id and no
// CONV record exists. Such a chain is still the conversation named by its root session's id: its
// record is written on first use, pointing at the live tip, and later rotations move it (K2).
import { randomUUID } from 'node:crypto';
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { fromDomainError } from '../../../lib/api/errors.js';
import { SessionIdNotConversationError } from '../../../lib/lineage/errors.js';
import { conversationKey } from '../../../lib/lineage/dynamo/conversation-row.js';
import { sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { append, begin, commitInput, doc, dynamoClient, makeStore, msgs, tableName } from './support.js';

const client = dynamoClient();
afterAll(() => client.destroy());
const store = makeStore(client);

/** Makes `ref`'s chain look as it did before conversations: no CONV record, no conversationId on any META. */
async function asLegacy(tenantId: string, rootId: string, sessions: string[]): Promise<void> {
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

async function rotate(ref: SessionRef): Promise<string> {
  const begun = await begin(store, ref);
  const r = await store.commitRotation(ref, begun, commitInput(msgs(100, 101)));
  return r.child.sessionId;
}

/** A root with items rotated once to a child, then stripped to the old shape. */
async function legacyChainOfTwo(): Promise<{ tenantId: string; root: SessionRef; child: string }> {
  const tenantId = `t-${randomUUID().slice(0, 8)}`;
  const s = await store.createSession({ tenantId, format: 'chat' });
  if (s.replayed) throw new Error('replay');
  const root = { tenantId, sessionId: s.session.sessionId };
  await append(store, root, msgs(1, 4));
  const child = await rotate(root);
  await asLegacy(tenantId, root.sessionId, [root.sessionId, child]);
  return { tenantId, root, child };
}

describe('chains from before conversations (K1, K2)', () => {
  it('K1: a legacy chain is the conversation named by its root: found on first use, at its live tip, once', async () => {
    const { tenantId, root, child } = await legacyChainOfTwo();

    // Concurrent first uses write one record, naming the live tip and the chain's length.
    const seen = await Promise.all(Array.from({ length: 4 }, () => store.getConversation(tenantId, root.sessionId)));
    for (const c of seen)
      expect(c).toMatchObject({ conversationId: root.sessionId, rootSessionId: root.sessionId, liveSessionId: child, sessions: 2 });
    expect((await store.getSession({ tenantId, sessionId: child }))?.conversationId).toBe(root.sessionId);

    // K2: a rotation of the adopted tip moves the record in its own commit.
    const grandchild = await rotate({ tenantId, sessionId: child });
    expect(await store.getConversation(tenantId, root.sessionId)).toMatchObject({ liveSessionId: grandchild, sessions: 3 });
  });

  it('K1: only a root names a legacy conversation; a child id, an unknown id and a deleted chain stay unknown', async () => {
    const { tenantId, root, child } = await legacyChainOfTwo();
    expect(await store.getConversation(tenantId, child)).toBeNull();
    expect(await store.getConversation(tenantId, 'no-such-id')).toBeNull();
    await store.deleteSession({ tenantId, sessionId: child });
    expect(await store.getConversation(tenantId, root.sessionId)).toBeNull();
  });

  it('K1: a PUT under the id of a session of another conversation is 409 naming that conversation, and creates nothing', async () => {
    const { tenantId, root, child } = await legacyChainOfTwo();
    const err = await store.ensureConversation({ tenantId, conversationId: child }, false).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SessionIdNotConversationError);
    expect(fromDomainError(err)).toMatchObject({ status: 409, code: 'conflict', details: { conversationId: root.sessionId } });
    // A conversation made since: its root's and its child's ids both name it.
    const made = await store.ensureConversation({ tenantId, conversationId: 'user_123' }, false);
    const madeChild = await rotate({ tenantId, sessionId: made.conversation.rootSessionId });
    for (const id of [made.conversation.rootSessionId, madeChild]) {
      await expect(store.ensureConversation({ tenantId, conversationId: id }, false)).rejects.toMatchObject({ conversationId: 'user_123' });
      expect(await store.getConversation(tenantId, id)).toBeNull();
    }
  });
});
