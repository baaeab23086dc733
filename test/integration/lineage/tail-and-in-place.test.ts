// Concurrent tail, in-place generations, size limits and tenancy (SPEC I4, C11, P3, F2).
import { randomUUID } from 'node:crypto';
import { DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ItemTooLargeError,
  MAX_ITEM_BYTES,
  SessionEndedError,
  SessionExistsError,
  SessionNotFoundError,
} from '../../../lib/lineage/index.js';
import { messageSk, taskSk } from '../../../lib/lineage/dynamo/keys.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { Item } from '../../../lib/items/types.js';
import { append, begin, commitInput, dynamoClient, makeStore, msg, msgs, newSession, rawItems, storedItems, tableName } from './support.js';

const client = dynamoClient();
const NOW = Date.UTC(2030, 0, 1);
const store = makeStore(client, { now: () => NOW, archiveRetentionSeconds: 3600 });
afterAll(() => client.destroy());

const summary: Item = { role: 'assistant', content: '[CONTEXT COMPACTION] summary' };

/** Runs `hook` once, just before the first TransactWriteItems this client sends from now on. */
function beforeFirstTransaction(hook: () => Promise<unknown>): () => void {
  const name = `before-tx-${randomUUID()}`;
  let fired = false;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (!fired && context.commandName === 'TransactWriteItemsCommand') {
        fired = true;
        await hook();
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
  return () => client.middlewareStack.remove(name);
}

describe('concurrent tail (I4)', () => {
  it('I4: appends after beginAttempt, and one landing just before the commit, all end up in the child in order', async () => {
    const ref = await newSession(store, msgs(1, 5));
    const other = makeStore(dynamoClient());
    const begun = await begin(store, ref);
    await append(store, ref, msgs(6, 7));
    // An append from another process lands right before the commit's first transaction goes out.
    const remove = beforeFirstTransaction(() => append(other, ref, [msg(8)]));
    const out = await store.commitRotation(ref, begun, commitInput([summary])).finally(remove);
    const childRef = { tenantId: ref.tenantId, sessionId: out.child.sessionId };
    expect(await store.readAll(childRef)).toEqual([summary, ...msgs(6, 8)]);
    expect(out.items).toEqual([summary, ...msgs(6, 8)]);
    expect(out.tailCarried).toBe(3);
  });

  it('I4: appends after beginAttempt (one racing the flip) survive into the new in-place generation, in order', async () => {
    const ref = await newSession(store, msgs(1, 5));
    const other = makeStore(dynamoClient());
    const begun = await begin(store, ref);
    await append(store, ref, msgs(6, 7));
    const remove = beforeFirstTransaction(() => append(other, ref, [msg(8)]));
    const out = await store.commitInPlace(ref, begun, commitInput([summary, msg(5)])).finally(remove);
    expect(out.tailCarried).toBe(3);
    expect(await store.readAll(ref)).toEqual([summary, msg(5), ...msgs(6, 8)]);
    // Appends after the flip continue the new generation.
    await append(store, ref, [msg(9)]);
    expect(await store.readAll(ref)).toEqual([summary, msg(5), ...msgs(6, 9)]);
  });

  it('I4/F1: appends to a rotated parent are refused with SessionEndedError naming the live child', async () => {
    const ref = await newSession(store);
    const begun = await begin(store, ref);
    await store.commitRotation(ref, begun, commitInput([summary]));
    const err = await append(store, ref, [msg(99)]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SessionEndedError);
    expect((err as SessionEndedError).liveSessionId).toBe(begun.attempt.pendingChildId);
  });
});

describe('in-place commit (C11, P3)', () => {
  it('C11/P3: flips the generation; the old items get their TTL from the deferred archive task, not from the commit', async () => {
    const ref = await newSession(store, msgs(1, 6));
    const before = (await store.getSession(ref))!;
    const begun = await begin(store, ref);
    await append(store, ref, [msg(7)]);
    const out = await store.commitInPlace(ref, begun, commitInput([summary]));

    expect(out.session.sessionId).toBe(ref.sessionId);
    expect(out.session.generation).toBe(begun.attempt.fence);
    expect(out.session.endedAt).toBeUndefined();
    expect(out.session.attempt).toBeUndefined();
    expect(out.session.messageCount).toBe(2);
    expect(await store.readAll(ref)).toEqual([summary, msg(7)]);
    expect(out.archive).toMatchObject({ kind: 'archive', generation: before.generation });

    const msgItems = async () => storedItems(client, ref);
    // Off the commit path: nothing archived yet, but the task is recorded with the commit.
    expect((await msgItems()).filter((i) => i.expiresAt !== undefined)).toEqual([]);
    expect((await rawItems(client, ref)).some((i) => i.sk === taskSk('archive', before.generation))).toBe(true);

    expect(await store.runTask(out.archive)).toBe(7);
    const items = await msgItems();
    const old = items.filter((i) => i.generation === before.generation);
    expect(old).toHaveLength(7);
    for (const i of old) expect(i.expiresAt).toBe(NOW / 1000 + 3600);
    for (const i of items.filter((x) => x.generation === out.session.generation)) expect(i.expiresAt).toBeUndefined();
    expect((await rawItems(client, ref)).some((i) => String(i.sk).startsWith('TASK#'))).toBe(false);
  });

  it('P3/S1: the sweep finds an archive task once it is due', async () => {
    const ref = await newSession(store, msgs(1, 3));
    const begun = await begin(store, ref);
    const out = await store.commitInPlace(ref, begun, commitInput([summary]));
    const early = await store.listSweepWork(NOW, 1000);
    expect(early.tasks.filter((t) => t.ref.sessionId === ref.sessionId)).toEqual([]);
    const due = await store.listSweepWork(out.archive.dueAt + 1, 1000);
    expect(due.tasks.filter((t) => t.ref.sessionId === ref.sessionId)).toEqual([
      expect.objectContaining({ kind: 'archive', generation: 0 }),
    ]);
  });

  it('C11: TTL is enabled on the table for expiresAt', async () => {
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName() }));
    expect(ttl.TimeToLiveDescription?.AttributeName).toBe('expiresAt');
    expect(ttl.TimeToLiveDescription?.TimeToLiveStatus).toMatch(/ENABL/);
  });

  it('C11/L6: an in-place commit of a replaced attempt is refused and the session is untouched', async () => {
    const ref = await newSession(store, msgs(1, 3));
    const a = await begin(store, ref, 'A', -1);
    await begin(store, ref, 'B');
    await expect(store.commitInPlace(ref, a, commitInput([summary]))).rejects.toThrow(/stale/);
    expect(await store.readAll(ref)).toEqual(msgs(1, 3));
    const items = await storedItems(client, ref);
    expect(items.filter((i) => i.generation === a.attempt.fence)).toEqual([]);
    expect(items).toHaveLength(3);
  });
});

describe('sizes', () => {
  it('a transcript over 400 KB round-trips intact; a commit too big for one transaction writes its items first', async () => {
    const big = Array.from({ length: 120 }, (_, i): Item => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `${i}:` + 'x'.repeat(30_000) + 'é',
      tool_call_id: `call-${i}`,
    }));
    const ref = await newSession(store, big);
    expect(await store.readAll(ref)).toEqual(big);
    const begun = await begin(store, ref);
    expect(await store.readSnapshot(ref, begun)).toEqual(big);
    const out = await store.commitRotation(ref, begun, commitInput(big.slice(10)));
    expect(await store.readAll({ tenantId: ref.tenantId, sessionId: out.child.sessionId })).toEqual(big.slice(10));
  });

  it('one item over the item limit -> ItemTooLargeError naming it, nothing written (never truncated)', async () => {
    const ref = await newSession(store, []);
    const tooBig: Item = { role: 'user', content: 'y'.repeat(MAX_ITEM_BYTES) };
    const err = await store.appendItems(ref, { prepare: asIs([msg(1), tooBig, msg(3)]) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ItemTooLargeError);
    expect((err as ItemTooLargeError).index).toBe(1);
    expect(await store.readAll(ref)).toEqual([]);
    expect((await rawItems(client, ref)).filter((i) => String(i.sk).startsWith('MSG#'))).toEqual([]);
    expect((await store.getSession(ref))?.lastSeq).toBe(0);
  });

  it('250 items appended in three requests read back in order', async () => {
    const ref = await newSession(store, msgs(1, 250));
    expect(await store.readAll(ref)).toEqual(msgs(1, 250));
    expect((await rawItems(client, ref)).some((i) => i.sk === messageSk(0, 250))).toBe(true);
  });
});

describe('sessions and tenancy', () => {
  it('F2: the same sessionId under two tenants is two different sessions', async () => {
    const sessionId = `shared-${randomUUID()}`;
    const a = { tenantId: `ta-${randomUUID()}`, sessionId };
    const b = { tenantId: `tb-${randomUUID()}`, sessionId };
    await store.createSession(a);
    await store.createSession(b);
    await append(store, a, [msg(1)]);
    await append(store, b, [msg(2), msg(3)]);
    expect(await store.readAll(a)).toEqual([msg(1)]);
    expect(await store.readAll(b)).toEqual([msg(2), msg(3)]);
    expect(await store.getSession({ tenantId: `tc-${randomUUID()}`, sessionId })).toBeNull();
  });

  it('createSession refuses a taken id; unknown sessions are SessionNotFoundError', async () => {
    const ref = await newSession(store, []);
    await expect(store.createSession(ref)).rejects.toBeInstanceOf(SessionExistsError);
    const missing = { tenantId: ref.tenantId, sessionId: randomUUID() };
    await expect(append(store, missing, [msg(1)])).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(store.readAll(missing)).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(begin(store, missing)).rejects.toBeInstanceOf(SessionNotFoundError);
  });

  it('A1: the format is stored, answered and inherited by the child', async () => {
    const ref = await newSession(store, [{ type: 'message', role: 'user', content: 'hi' }], 'responses');
    expect((await store.getSession(ref))?.format).toBe('responses');
    const begun = await begin(store, ref);
    const out = await store.commitRotation(ref, begun, commitInput([{ type: 'message', role: 'assistant', content: 'sum' }]));
    expect(out.child.format).toBe('responses');
    expect((await store.getSession({ tenantId: ref.tenantId, sessionId: out.child.sessionId }))?.format).toBe('responses');
  });

  it('C5: touchActivity records the mark without bumping the version a commit checks', async () => {
    const ref = await newSession(store);
    const begun = await begin(store, ref);
    await store.touchActivity(ref, 'compaction in progress');
    expect((await store.getSession(ref))?.lastActivity).toEqual({ label: 'compaction in progress', at: new Date(NOW).toISOString() });
    await store.commitRotation(ref, begun, commitInput([summary]));
    await store.touchActivity({ tenantId: ref.tenantId, sessionId: randomUUID() }, 'missing is fine');
  });
});
