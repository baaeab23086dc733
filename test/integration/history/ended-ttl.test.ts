// SPEC H3: a rotated parent's rows get DynamoDB's TTL from the conversation's endedSessionSeconds.
// The rotation commit puts an ended task on the parent in its own transaction; the sweep finds it
// (attemptsByExpiry) and runs it with the retention in force then.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { sessionPk, taskSk } from '../../../lib/lineage/dynamo/keys.js';
import { begin, commitInput, doc, dynamoClient, makeStore, tableName } from '../lineage/support.js';

const ddb = dynamoClient();
// Pacing (write-budget.ts) is not under test here: megabytes of chunks get their TTL without waiting.
const store = makeStore(ddb, { backgroundWriteUnitsPerSecond: 1_000_000 });
afterAll(() => ddb.destroy());
const msg = (role: string, content: string) => ({ role, content });
/** Over the row limit: stored in inline parts (MSG#<g>#<seq>#<k>). */
const big = msg('user', 'big '.padEnd(500_000, 'x'));
/** Two of these in one append exceed a transaction: written ahead, in chunks (PART# rows) their rows name. */
const huge = (n: number) => msg('user', `huge ${n} `.padEnd(2_200_000, 'x'));

/** A conversation whose root was compacted in place (archive task run), then rotated. */
async function rotated(
  retention?: { endedSessionSeconds: number },
  chunks = false,
): Promise<{ tenantId: string; id: string; parent: SessionRef; child: SessionRef }> {
  const tenantId = `ended-${randomUUID().slice(0, 8)}`;
  const id = `conv-${randomUUID().slice(0, 8)}`;
  const { conversation } = await store.ensureConversation({ tenantId, conversationId: id }, false);
  if (retention) await store.setConversationRetention(tenantId, id, retention);
  const parent = { tenantId, sessionId: conversation.rootSessionId };
  const add = (items: unknown[]) =>
    store.appendItems(parent, { prepare: () => ({ items: items as never, tokenEstimates: items.map(() => 1) }) });
  await add([big, msg('assistant', 'a1'), msg('user', 'u2')]);
  const inPlace = await store.commitInPlace(parent, await begin(store, parent), commitInput([msg('user', 'sum 0')]));
  await store.runTask(inPlace.archive);
  await add([big, msg('assistant', 'a3')]);
  if (chunks) await add([huge(1), huge(2)]);
  const out = await store.commitRotation(parent, await begin(store, parent), commitInput([msg('user', 'sum 1')]));
  return { tenantId, id, parent, child: { tenantId, sessionId: out.child.sessionId } };
}

/** What the sweep does with the parent's due tasks: found through attemptsByExpiry, then run. */
async function sweepTasksOf(s: DynamoLineageStore, ref: SessionRef): Promise<string[]> {
  const { tasks } = await s.listSweepWork(Date.now() + 1000, 1000);
  const ours = tasks.filter((t) => t.ref.tenantId === ref.tenantId && t.ref.sessionId === ref.sessionId);
  for (const t of ours) await s.runTask(t);
  return ours.map((t) => t.kind);
}

/** Every item under the session's key (paged: chunks make it more than one 1 MB page). */
async function rawItems(_: unknown, ref: SessionRef): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc(ddb).send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': sessionPk(ref) },
        ProjectionExpression: 'pk, sk, expiresAt',
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    out.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

const stored = async (ref: SessionRef) =>
  (await rawItems(ddb, ref)).filter((r) => String(r.sk).startsWith('MSG#') || String(r.sk).startsWith('PART#'));

describe('ended sessions expire by DynamoDB TTL (SPEC H3)', () => {
  it('H3: with endedSessionSeconds set, after a rotation and its ended task (run by the sweep), every row of the parent carries expiresAt = endedAt + seconds', async () => {
    const { parent, child } = await rotated({ endedSessionSeconds: 120 }, true);
    const meta = (await store.getSession(parent))!;
    const raw = await rawItems(ddb, parent);
    const task = raw.find((r) => r.sk === taskSk('ended', meta.generation));
    expect(task, 'the rotation wrote the ended task').toBeDefined();
    // Before the task: the archive's 7-day stamp on the replaced generation, none on the rest.
    expect((await stored(parent)).some((r) => r.expiresAt === undefined)).toBe(true);
    expect(await sweepTasksOf(store, parent)).toEqual(['ended']);
    const rows = await stored(parent);
    const expiresAt = Math.ceil(Date.parse(meta.endedAt!) / 1000) + 120;
    expect(rows.filter((r) => String(r.sk).startsWith('PART#')).length).toBeGreaterThan(0);
    expect(rows.filter((r) => /^MSG#\d{10}#!$/.test(String(r.sk)))).toHaveLength(1);
    for (const r of rows) expect({ sk: r.sk, expiresAt: r.expiresAt }).toEqual({ sk: r.sk, expiresAt });
    expect((await rawItems(ddb, parent)).some((r) => String(r.sk).startsWith('TASK#'))).toBe(false);
    // The child is live: untouched.
    expect((await stored(child)).every((r) => r.expiresAt === undefined)).toBe(true);
  }, 120_000);

  it('H3: with no endedSessionSeconds, the ended task stamps nothing and is gone', async () => {
    const { parent } = await rotated();
    const meta = (await store.getSession(parent))!;
    const before = await stored(parent);
    expect((await rawItems(ddb, parent)).some((r) => r.sk === taskSk('ended', meta.generation))).toBe(true);
    expect(await sweepTasksOf(store, parent)).toEqual(['ended']);
    // Only the archive's stamps (the generation replaced in place), exactly as before the task.
    expect(await stored(parent)).toEqual(before);
    expect(before.filter((r) => r.expiresAt === undefined).length).toBeGreaterThan(0);
    expect((await rawItems(ddb, parent)).some((r) => String(r.sk).startsWith('TASK#'))).toBe(false);
  });

  it("H3/H4: a deleted conversation's purge removes a rotated parent's ended task before it ran; a stale run after it writes nothing back", async () => {
    const { tenantId, id, parent } = await rotated({ endedSessionSeconds: 120 });
    const generation = (await store.getSession(parent))!.generation;
    expect((await rawItems(ddb, parent)).some((r) => r.sk === taskSk('ended', generation))).toBe(true);
    await store.deleteConversation(tenantId, id);
    // The purge the delete starts in the background, run here to its end (idempotent).
    await store.runTask({ ref: parent, kind: 'purge', generation: 0, dueAt: Date.now() });
    expect(await rawItems(ddb, parent)).toEqual([]);
    // A sweep that listed the ended task before the purge: the session is gone, nothing is stamped or written.
    expect(await store.runTask({ ref: parent, kind: 'ended', generation, dueAt: Date.now() })).toBe(0);
    expect(await rawItems(ddb, parent)).toEqual([]);
  });
});
