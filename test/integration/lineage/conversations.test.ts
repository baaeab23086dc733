// Conversations in the store (SPEC K1-K3) on DynamoDB Local: one record per tenant + id, created
// with its root in one transaction, its live tip moved by the rotation's own commit.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FormatMismatchError, SessionNotFoundError } from '../../../lib/lineage/errors.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import { append, begin, commitInput, makeStore, msgs } from './support.js';

const store = makeStore();
const tenant = () => `t-${randomUUID().slice(0, 8)}`;

describe('conversations in the store (K1-K3)', () => {
  it('K1: concurrent creates of one id make exactly one conversation with one root session', async () => {
    const tenantId = tenant();
    const results = await Promise.all(
      Array.from({ length: 8 }, () => store.ensureConversation({ tenantId, conversationId: 'user_123', format: 'responses' }, true)),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const roots = new Set(results.map((r) => r.conversation.rootSessionId));
    expect(roots.size).toBe(1);
    const conv = await store.getConversation(tenantId, 'user_123');
    expect(conv).toMatchObject({ conversationId: 'user_123', format: 'responses', sessions: 1, liveSessionId: [...roots][0] });
    const root = await store.getSession({ tenantId, sessionId: conv!.rootSessionId });
    expect(root).toMatchObject({ conversationId: 'user_123', format: 'responses' });
    await expect(store.ensureConversation({ tenantId, conversationId: 'user_123', format: 'chat' }, true)).rejects.toBeInstanceOf(
      FormatMismatchError,
    );
  });

  it('K1: two tenants each have their own user_123; POST /sessions chains are conversations named by their root', async () => {
    const [a, b] = [tenant(), tenant()];
    const ca = await store.ensureConversation({ tenantId: a, conversationId: 'user_123' }, false);
    const cb = await store.ensureConversation({ tenantId: b, conversationId: 'user_123' }, false);
    expect(ca.created && cb.created).toBe(true);
    expect(ca.conversation.rootSessionId).not.toBe(cb.conversation.rootSessionId);
    const s = await store.createSession({ tenantId: a });
    if (s.replayed) throw new Error('replay');
    expect(s.session.conversationId).toBe(s.session.sessionId);
    expect(await store.getConversation(a, s.session.sessionId)).toMatchObject({ liveSessionId: s.session.sessionId });
  });

  it('K2: the rotation commit moves the live tip in its own transaction', async () => {
    const tenantId = tenant();
    const { conversation } = await store.ensureConversation({ tenantId, conversationId: 'c.1@x:y' }, false);
    const ref = { tenantId, sessionId: conversation.rootSessionId };
    await append(store, ref, msgs(1, 6));
    const begun = await begin(store, ref);
    const r = await store.commitRotation(ref, begun, commitInput(msgs(5, 6)));
    expect(await store.getConversation(tenantId, 'c.1@x:y')).toMatchObject({ liveSessionId: r.child.sessionId, sessions: 2 });
    expect(r.child.conversationId).toBe('c.1@x:y');
  });

  it('K2/K3: a rotation whose conversation was deleted under the attempt commits nothing', async () => {
    const tenantId = tenant();
    const { conversation } = await store.ensureConversation({ tenantId, conversationId: 'gone' }, false);
    const ref = { tenantId, sessionId: conversation.rootSessionId };
    await append(store, ref, msgs(1, 6));
    const begun = await begin(store, ref);
    await store.deleteConversation(tenantId, 'gone');
    await expect(store.commitRotation(ref, begun, commitInput(msgs(5, 6)))).rejects.toBeInstanceOf(SessionNotFoundError);
    expect(await store.getSession({ tenantId, sessionId: begun.attempt.pendingChildId })).toBeNull();
    expect(await store.getConversation(tenantId, 'gone')).toBeNull();
  });

  it('K3: delete removes every session of the chain; the id can be created again, afresh', async () => {
    const tenantId = tenant();
    const { conversation } = await store.ensureConversation({ tenantId, conversationId: 'long' }, false);
    let ref = { tenantId, sessionId: conversation.rootSessionId };
    const ids = [ref.sessionId];
    for (let i = 0; i < 3; i++) {
      await store.appendItems(ref, { prepare: asIs(msgs(1, 4)) });
      const r = await store.commitRotation(ref, await begin(store, ref), commitInput(msgs(3, 4)));
      ref = { tenantId, sessionId: r.child.sessionId };
      ids.push(ref.sessionId);
    }
    expect((await store.getConversation(tenantId, 'long'))!.sessions).toBe(4);
    await store.deleteConversation(tenantId, 'long');
    for (const id of ids) expect(await store.getSession({ tenantId, sessionId: id })).toBeNull();
    expect(await store.getConversation(tenantId, 'long')).toBeNull();
    const again = await store.ensureConversation({ tenantId, conversationId: 'long' }, false);
    expect(again.created).toBe(true);
    expect(ids).not.toContain(again.conversation.rootSessionId);
  });

  it('K1: the listing is most recently active first, paged', async () => {
    const tenantId = tenant();
    for (const id of ['a', 'b', 'c']) {
      await store.ensureConversation({ tenantId, conversationId: id }, false);
      await new Promise((r) => setTimeout(r, 5));
    }
    await store.updateConversationMetadata(tenantId, 'a', { pinned: true });
    const first = await store.listConversations(tenantId, 2);
    expect(first.conversations.map((c) => c.conversationId)).toEqual(['a', 'c']);
    expect(first.conversations[0]).toMatchObject({ metadata: { pinned: true }, messageCount: 0 });
    const second = await store.listConversations(tenantId, 2, first.next!);
    expect(second.conversations.map((c) => c.conversationId)).toEqual(['b']);
    expect(second.next).toBeNull();
  });
});
