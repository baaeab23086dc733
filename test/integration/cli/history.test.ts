// `conversations export` (SPEC H5) and `tenants set-retention` (SPEC H3) in the operator CLI.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { exportPage } from '../../../lib/api/export.js';
import { cliInProcess } from '../../support/cli.js';
import { begin, commitInput, dynamoClient, makeStore, msgs } from '../lineage/support.js';

const ddb = dynamoClient();
const store = makeStore(ddb);
afterAll(() => ddb.destroy());

describe('history in the CLI', () => {
  it('H5: conversations export writes every page as JSON Lines: the conversation line, then every history entry (in-place and rotated ones too)', async () => {
    const tenantId = `cli-h-${randomUUID().slice(0, 8)}`;
    const { conversation } = await store.ensureConversation({ tenantId, conversationId: 'exp.1' }, false);
    const root = { tenantId, sessionId: conversation.rootSessionId };
    await store.appendItems(root, { prepare: () => ({ items: msgs(1, 5), tokenEstimates: [1, 1, 1, 1, 1] }) });
    await store.commitInPlace(root, await begin(store, root), commitInput(msgs(4, 5)));
    await store.commitRotation(root, await begin(store, root), commitInput(msgs(5, 5)));
    const run = await cliInProcess(['conversations', 'export', 'exp.1', '--tenant', tenantId, '--limit', '2']);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; item?: unknown; summary?: boolean });
    expect(lines[0]).toMatchObject({ type: 'conversation', conversation: { conversationId: 'exp.1', sessions: 2 } });
    expect(lines.slice(1).map((l) => [l.type, l.item, l.summary ?? false])).toEqual([
      ...msgs(1, 5).map((m) => ['item', m, false]),
      ...msgs(4, 5).map((m) => ['item', m, true]),
      ['item', msgs(5, 5)[0], true],
    ]);
    // The same lines as the API's pages, concatenated.
    let text = '';
    let cursor: string | undefined;
    do {
      const p = await exportPage(store, tenantId, 'exp.1', { cursor, limit: 500 });
      text += p.text;
      cursor = p.nextCursor ?? undefined;
    } while (cursor);
    expect(run.stdout).toBe(text);
    const missing = await cliInProcess(['conversations', 'export', 'nope', '--tenant', tenantId]);
    expect(missing.code).toBe(1);
  });

  it('H3: tenants set-retention stores the tenant setting (at least 60 s; default removes it)', async () => {
    const tenantId = `cli-r-${randomUUID().slice(0, 8)}`;
    const set = await cliInProcess([
      'tenants',
      'set-retention',
      tenantId,
      '--archived-seconds',
      '600',
      '--ended-session-seconds',
      '3600',
      '--json',
    ]);
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toEqual({ tenantId, retention: { archivedSeconds: 600, endedSessionSeconds: 3600 } });
    expect(await store.tenantRetention(tenantId)).toEqual({ archivedSeconds: 600, endedSessionSeconds: 3600 });
    expect((await cliInProcess(['tenants', 'set-retention', tenantId, '--archived-seconds', '59'])).code).toBe(2);
    expect((await cliInProcess(['tenants', 'set-retention', tenantId, '--ended-session-seconds', 'default'])).code).toBe(0);
    expect(await store.tenantRetention(tenantId)).toEqual({ archivedSeconds: 600 });
  });
});
