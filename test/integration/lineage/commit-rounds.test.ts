// Issue 28, the commit path: rows a compaction round writes ahead of its commit (commit.ts), the
// task that lists them (parts.ts), reads that meet leftovers or popped chunks (table.ts), pages
// bounded in UTF-8 bytes (A5), the seal of a round that writes ahead, and the snapshot read
// beside the begin. Interleavings are forced with client middleware on real clients (no sleeps
// decide an outcome); clocks are injected where the seal's 3 s matter.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import type { Item } from '../../../lib/items/types.js';
import { conversationKey } from '../../../lib/lineage/dynamo/conversation-row.js';
import { messageSk, sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import { SessionNotFoundError } from '../../../lib/lineage/errors.js';
import { MAX_PAGE_BYTES } from '../../../lib/lineage/limits.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { append, begin, commitInput, doc, dynamoClient, makeStore, msg, msgs, newSession, rawItems, tableName } from './support.js';

const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));
function client(): DynamoDBClient {
  const c = dynamoClient();
  clients.push(c);
  return c;
}

const summary: Item = { role: 'assistant', content: 'summary' };
/** An item of exactly `bytes` bytes of JSON. */
function sized(bytes: number, tag: string): Item {
  const frame = Buffer.byteLength(JSON.stringify({ role: 'user', content: tag }), 'utf8');
  return { role: 'user', content: tag + 'x'.repeat(bytes - frame) };
}
/** Compacted items more than a 2,000-byte transaction carries: every round writes them ahead. */
const many = Array.from({ length: 120 }, (_, k): Item => ({ role: 'assistant', content: `kept ${k}` }));

interface Input {
  TransactItems?: unknown[];
  RequestItems?: Record<string, { PutRequest?: { Item?: { sk?: string } } }[]>;
  KeyConditionExpression?: string;
  ExpressionAttributeValues?: Record<string, unknown>;
}
/** A BatchWriteItem that puts item rows (a commit's rows written ahead, not its task). */
const putsRows = (input: Input) =>
  Object.values(input.RequestItems ?? {}).some((reqs) => reqs.some((r) => String(r.PutRequest?.Item?.sk ?? '').startsWith('MSG#')));

/** Runs `before` once, just before the `n`th transaction this client sends (1-based). */
function beforeTransaction(c: DynamoDBClient, n: number, before: () => Promise<unknown>): void {
  let seen = 0;
  c.middlewareStack.add(
    (next) => async (args) => {
      if ((args.input as Input).TransactItems !== undefined && ++seen === n) await before();
      return next(args);
    },
    { step: 'initialize', name: `beforeTransaction${n}` },
  );
}

/** Raw rows under `ref` whose sort key starts with `prefix`. */
async function rowsOf(ref: SessionRef, prefix: string): Promise<Record<string, unknown>[]> {
  return (await rawItems(client(), ref)).filter((r) => String(r.sk).startsWith(prefix));
}

describe('rows of an earlier commit round (issue 28 item 1: I4, A6)', { timeout: 120_000 }, () => {
  // The interleaving of the issue: an item A of 3.5 KB appended after the begin (round 0 loses on
  // the version); round 1 carries summary + A, too big for one 3,000-byte transaction, so it
  // writes its row ahead (MSG#<g>#2, first=1); A is popped before round 1's transaction (it
  // loses); the sealed round 2 carries only the summary, fits inline and commits.
  const A = sized(3_500, 'A');
  for (const mode of ['rotate', 'in_place'] as const) {
    it(`I4/A6/C10: ${mode}: a commit that goes from a round written ahead to an inline round (A popped between): no leftover row, no task; reads never repeat the summary or bring A back`, async () => {
      const other = makeStore();
      const ref = await newSession(other, msgs(1, 4));
      const c = client();
      beforeTransaction(c, 2, () => other.popLast(ref));
      const store = makeStore(c, { transactionBytes: 3_000 });
      const a = await begin(store, ref);
      await append(other, ref, [A]);
      const input = commitInput([summary]);
      const target =
        mode === 'rotate'
          ? { tenantId: ref.tenantId, sessionId: (await store.commitRotation(ref, a, input)).child.sessionId }
          : (await store.commitInPlace(ref, a, input), ref);
      const generation = mode === 'rotate' ? 0 : a.attempt.fence;
      expect(await other.readAll(target)).toEqual([summary]);
      // The committed round's row alone, and no task left for the sweep.
      expect((await rowsOf(target, `MSG#${String(generation).padStart(10, '0')}#`)).map((r) => r.sk)).toEqual([messageSk(generation, 1)]);
      expect(await rowsOf(target, 'TASK#parts')).toEqual([]);
      // Two items in one row, MSG#<g>#3 with first=2: where a leftover MSG#<g>#2 would read back.
      await other.appendItems(target, { prepare: asIs([msg(7), msg(8)]) });
      const expected = [summary, msg(7), msg(8)];
      expect(await other.readAll(target)).toEqual(expected);
      expect((await other.readTail(target, 10, MAX_PAGE_BYTES)).items).toEqual(expected);
      const first = await other.readPage(target, { limit: 2, maxBytes: MAX_PAGE_BYTES });
      const second = await other.readPage(target, { limit: 2, maxBytes: MAX_PAGE_BYTES, from: first.next! });
      expect([...first.items, ...second.items]).toEqual(expected);
    });
  }

  it('I4/A6: readers skip a row whose first item is at or below the last one emitted (a leftover stored by code before this fix)', async () => {
    const store = makeStore();
    const ref = await newSession(store, [summary]);
    await store.appendItems(ref, { prepare: asIs([msg(7), msg(8)]) });
    // The leftover of the issue: MSG#0#2, first=1, holding the summary and a popped item A.
    const bodies = [summary, A].map((it) => JSON.stringify(it));
    await doc(client()).send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          pk: sessionPk(ref),
          sk: messageSk(0, 2),
          seq: 2,
          first: 1,
          idx: bodies.map((b) => `${b.length}.5`).join(','),
          data: bodies.join(''),
        },
      }),
    );
    const expected = [summary, msg(7), msg(8)];
    expect(await store.readAll(ref)).toEqual(expected);
    expect((await store.readTail(ref, 10, MAX_PAGE_BYTES)).items).toEqual(expected);
    expect((await store.readTail(ref, 2, MAX_PAGE_BYTES)).items).toEqual([msg(7), msg(8)]);
    // Within one read: a page that starts at a cursor past the leftover's first item cannot tell it apart.
    expect((await store.readPage(ref, { limit: 10, maxBytes: MAX_PAGE_BYTES })).items).toEqual(expected);
  });
});

describe('a BatchWriteItem answer lost after it applied (issue 28 item 8: A7, S2)', { timeout: 120_000 }, () => {
  /** Lets the first BatchWriteItem of rows through to DynamoDB, then loses its answer; with `thenDown`, every later call fails too. */
  function loseRowsAnswer(c: DynamoDBClient, thenDown = false): { lost: boolean } {
    const state = { lost: false };
    const lostAnswer = () => Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
    c.middlewareStack.add(
      (next) => async (args) => {
        if (state.lost && thenDown) throw lostAnswer();
        if (!state.lost && putsRows(args.input as Input)) {
          await next(args);
          state.lost = true;
          throw lostAnswer();
        }
        return next(args);
      },
      { step: 'initialize', name: 'loseRowsAnswer' },
    );
    return state;
  }

  for (const mode of ['rotate', 'in_place'] as const) {
    it(`A7/S2: ${mode}: rows written ahead whose write answered with a lost response are removed by the failed commit itself`, async () => {
      const other = makeStore();
      const ref = await newSession(other, msgs(1, 4));
      const c = client();
      const fault = loseRowsAnswer(c);
      const store = makeStore(c, { transactionBytes: 2_000 });
      const a = await begin(store, ref);
      const commit = mode === 'rotate' ? store.commitRotation(ref, a, commitInput(many)) : store.commitInPlace(ref, a, commitInput(many));
      await expect(commit).rejects.toThrow();
      expect(fault.lost).toBe(true);
      const target = mode === 'rotate' ? { tenantId: ref.tenantId, sessionId: a.attempt.pendingChildId } : ref;
      expect(await rowsOf(target, `MSG#${String(mode === 'rotate' ? 0 : a.attempt.fence).padStart(10, '0')}#`)).toEqual([]);
      expect(await rowsOf(target, 'TASK#')).toEqual([]);
      // The attempt went only after its rows; the session is as it was.
      expect((await other.getSession(ref))?.attempt).toBeUndefined();
      expect(await other.readAll(ref)).toEqual(msgs(1, 4));
    });

    it(`A7/S2: ${mode}: when the committer cannot clean up either, the sweep's task removes those rows once due`, async () => {
      const other = makeStore();
      const ref = await newSession(other, msgs(1, 4));
      const c = client();
      loseRowsAnswer(c, true);
      const store = makeStore(c, { transactionBytes: 2_000, retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 } });
      const a = await begin(store, ref);
      const commit = mode === 'rotate' ? store.commitRotation(ref, a, commitInput(many)) : store.commitInPlace(ref, a, commitInput(many));
      await expect(commit).rejects.toThrow();
      const target = mode === 'rotate' ? { tenantId: ref.tenantId, sessionId: a.attempt.pendingChildId } : ref;
      const prefix = `MSG#${String(mode === 'rotate' ? 0 : a.attempt.fence).padStart(10, '0')}#`;
      expect((await rowsOf(target, prefix)).length).toBeGreaterThan(0);
      // The task alone (not the expired attempt's cleanup) finds them: run only it.
      const tasks = (await other.listSweepWork(Date.now() + 31 * 60_000, 1000)).tasks.filter((t) => t.ref.sessionId === target.sessionId);
      expect(tasks).toMatchObject([{ kind: 'parts' }]);
      await other.runTask(tasks[0]!);
      expect(await rowsOf(target, prefix)).toEqual([]);
      expect(await rowsOf(target, 'TASK#')).toEqual([]);
      expect(await other.readAll(ref)).toEqual(msgs(1, 4));
    });
  }
});

describe('conditions no test pinned (issue 28)', { timeout: 120_000 }, () => {
  it('K2: a rotation whose conversation record names another live session (TIP_IS_PARENT) commits nothing and moves no tip', async () => {
    const store = makeStore();
    const tenantId = `t-${randomUUID()}`;
    const { conversation } = await store.ensureConversation({ tenantId, conversationId: 'moved' }, false);
    const ref = { tenantId, sessionId: conversation.rootSessionId };
    await append(store, ref, msgs(1, 4));
    const a = await begin(store, ref);
    // A state only this clause decides: the parent is live (LIVE holds) but is not the conversation's tip.
    await doc(client()).send(
      new UpdateCommand({
        TableName: tableName(),
        Key: conversationKey(tenantId, 'moved'),
        UpdateExpression: 'SET liveSessionId = :other',
        ExpressionAttributeValues: { ':other': 'another-session' },
      }),
    );
    await expect(store.commitRotation(ref, a, commitInput(msgs(3, 4)))).rejects.toBeInstanceOf(SessionNotFoundError);
    expect(await store.getConversation(tenantId, 'moved')).toMatchObject({ liveSessionId: 'another-session', sessions: 1 });
    expect(await store.children(ref)).toEqual([]);
    expect((await store.getSession(ref))?.endedAt).toBeUndefined();
  });
});

describe('the seal and the snapshot read (issue 28, suspected)', { timeout: 120_000 }, () => {
  it('I4/C11: in place, every round writes megabytes ahead on a slow DynamoDB (4 s by the clock, past SEAL_MS): the sealed round still commits, every append lands once', async () => {
    // One clock for committer and appender, standing still but for 4 s moved by every write of
    // rows ahead (the write "took" 4 s): the machine's own load cannot move the outcome.
    const skew = { ms: 0 };
    const base = Date.now();
    const now = () => base + skew.ms;
    // The appender says when it found a live seal on the record (it then waits for the seal to go).
    const pc = client();
    let sealSeen: () => void = () => undefined;
    pc.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        // The record as read (marshalled or not, depending on where in the stack this runs).
        const seal = (out.output as { Item?: { seal?: { until?: number; M?: { until?: { N?: string } } } } }).Item?.seal;
        if (/^Get/.test(context.commandName ?? '') && Number(seal?.until ?? seal?.M?.until?.N ?? 0) > now()) sealSeen();
        return out;
      },
      { step: 'initialize', name: 'sealSeen' },
    );
    const appender = makeStore(pc, { now });
    const ref = await newSession(appender, msgs(1, 4));
    const c = client();
    const state = { n: 0, transactions: 0, appends: [] as Promise<unknown>[] };
    c.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as Input;
        if (input.TransactItems !== undefined) state.transactions++;
        if (!putsRows(input)) return next(args);
        const out = await next(args);
        skew.ms += 4_000;
        // An append arrives as the slow write ends: it lands, or it meets a live seal and waits.
        const waiting = new Promise<void>((r) => (sealSeen = r));
        const appended = append(appender, ref, [msg(100 + state.n++)]);
        state.appends.push(appended);
        await Promise.race([appended, waiting]);
        return out;
      },
      { step: 'initialize', name: 'slowRowsAhead' },
    );
    const store = makeStore(c, { transactionBytes: 2_000, now });
    const a = await begin(store, ref);
    await store.commitInPlace(ref, a, commitInput(many));
    await Promise.all(state.appends);
    // Round 0 and round 1 lose to an append; the sealed round 2 holds them back and commits.
    expect(state.transactions).toBe(3);
    const appended = Array.from({ length: state.n }, (_, k) => msg(100 + k));
    expect(await appender.readAll(ref)).toEqual([...many, ...appended]);
  });

  it('P1: a snapshot read sent beside the begin that fails (a transient error) is read again, not the attempt failed', async () => {
    const c = client();
    const store = makeStore(c);
    // This store appended the items, so it knows the record and reads beside the begin.
    const ref = await newSession(store, msgs(1, 5));
    const state = { queries: 0, failed: 0 };
    c.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'QueryCommand' && state.queries++ === 0) {
          state.failed++;
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
        }
        return next(args);
      },
      { step: 'initialize', name: 'failFirstQuery' },
    );
    const a = await begin(store, ref);
    expect(await store.readSnapshot(ref, a)).toEqual(msgs(1, 5));
    expect(state).toEqual({ queries: 2, failed: 1 });
  });
});
