// `conversations list | show | delete` and `lineage <conversation id>` (SPEC K1-K3, issue 20).
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, cliInProcess } from '../../support/cli.js';
import { begin, commitInput, dynamoClient, makeStore, msgs } from '../lineage/support.js';

const ddb = dynamoClient();
const store = makeStore(ddb);
afterAll(() => ddb.destroy());

async function rotatedConversation(tenantId: string, id: string) {
  const { conversation } = await store.ensureConversation({ tenantId, conversationId: id, metadata: { user: 'u1' } }, false);
  const root = { tenantId, sessionId: conversation.rootSessionId };
  await store.appendItems(root, { prepare: () => ({ items: msgs(1, 4), tokenEstimates: [1, 1, 1, 1] }) });
  const r = await store.commitRotation(root, await begin(store, root), commitInput(msgs(3, 4)));
  return { root: root.sessionId, child: r.child.sessionId };
}

describe('conversations in the CLI', () => {
  it('K1: list (most recent first), show, and lineage by conversation id', async () => {
    const tenantId = `cli-${randomUUID().slice(0, 8)}`;
    const { root, child } = await rotatedConversation(tenantId, 'user_123@chat');
    await store.ensureConversation({ tenantId, conversationId: 'newer' }, false);

    const list = await cliInProcess(['conversations', 'list', '--tenant', tenantId, '--json']);
    expect(list.code, list.stderr).toBe(0);
    const page = JSON.parse(list.stdout) as { conversations: { conversationId: string; sessions: number }[] };
    expect(page.conversations.map((c) => c.conversationId)).toEqual(['newer', 'user_123@chat']);
    expect(page).toHaveProperty('nextCursor', null);
    // The cursor is named as the API names it (GET /conversations: nextCursor), and pages on.
    const first = JSON.parse((await cliInProcess(['conversations', 'list', '--tenant', tenantId, '--limit', '1', '--json'])).stdout) as {
      conversations: { conversationId: string }[];
      nextCursor: string | null;
    };
    expect(Object.keys(first).sort()).toEqual(['conversations', 'nextCursor']);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await cliInProcess([
      'conversations',
      'list',
      '--tenant',
      tenantId,
      '--limit',
      '1',
      '--cursor',
      first.nextCursor!,
      '--json',
    ]);
    expect((JSON.parse(second.stdout) as typeof first).conversations.map((c) => c.conversationId)).toEqual(['user_123@chat']);

    const show = await cliInProcess(['conversations', 'show', 'user_123@chat', '--tenant', tenantId]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(new RegExp(`live session\\s+${child}`));
    expect(show.stdout).toMatch(/sessions\s+2/);
    expect(show.stdout).toContain('{"user":"u1"}');

    const lineage = await cliInProcess(['lineage', 'user_123@chat', '--tenant', tenantId, '--json']);
    expect(lineage.code, lineage.stderr).toBe(0);
    const out = JSON.parse(lineage.stdout) as { conversationId: string; liveTip: string; sessions: { sessionId: string }[] };
    expect(out).toMatchObject({ conversationId: 'user_123@chat', liveTip: child });
    expect(out.sessions.map((s) => s.sessionId)).toEqual([root, child]);
    // A session id still works, and names its conversation.
    const bySession = await cliInProcess(['lineage', root, '--tenant', tenantId]);
    expect(bySession.stdout).toContain('conversation user_123@chat');
  });

  it('K1: lease show takes a conversation id, as lineage does, and reads the lease of its live session', async () => {
    const tenantId = `cli-${randomUUID().slice(0, 8)}`;
    const { child } = await rotatedConversation(tenantId, 'leased');
    const run = await cliInProcess(['lease', 'show', 'leased', '--tenant', tenantId]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`conversation leased: its live session is ${child}`);
    expect(run.stdout).toContain(`lease lease:session:${tenantId}/${child} on 3 nodes`);
    const unknown = await cliInProcess(['lease', 'show', 'no.such:conversation', '--tenant', tenantId]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`conversation no.such:conversation of tenant ${tenantId} not found`);
  });

  it('K3: delete asks first, then removes every session; unknown ids exit 1, bad ones exit 2', async () => {
    const tenantId = `cli-${randomUUID().slice(0, 8)}`;
    const { root, child } = await rotatedConversation(tenantId, 'doomed');
    const refused = await cliInProcess(['conversations', 'delete', 'doomed', '--tenant', tenantId]);
    expect(refused.code).toBe(2);
    expect(await store.getConversation(tenantId, 'doomed')).not.toBeNull();
    const run = await cli(['conversations', 'delete', 'doomed', '--tenant', tenantId, '--yes']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('deleted conversation doomed');
    expect(await store.getConversation(tenantId, 'doomed')).toBeNull();
    for (const sessionId of [root, child]) expect(await store.getSession({ tenantId, sessionId })).toBeNull();
    const again = await cliInProcess(['conversations', 'show', 'doomed', '--tenant', tenantId]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`conversation doomed of tenant ${tenantId} not found`);
    const bad = await cliInProcess(['conversations', 'show', 'a#b', '--tenant', tenantId]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('invalid conversation id');
  });
});
