// Faults DynamoDB Local cannot produce on demand, injected with client middleware on REAL clients:
// throttling and transaction conflicts (bounded retries, then StoreRetryableError), a commit whose
// response was lost after it committed (detected, reported as success), and a newer attempt beginning
// between a commit's message writes and its conditional flip (SPEC I1, I2, C10, C11, L6).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { FenceStaleError, SessionEndedError, StoreRetryableError } from '../../../lib/lineage/index.js';
import type { Item } from '../../../lib/items/types.js';
import { append, begin, commitInput, dynamoClient, makeStore, msg, msgs, newSession, rawItems, storedItems } from './support.js';

type Matcher = (commandName: string, input: Record<string, unknown>) => boolean;
const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));

function faultyClient(): DynamoDBClient {
  const c = dynamoClient();
  clients.push(c);
  return c;
}

/** Throws `makeError()` instead of sending, for commands `match` selects, while `remaining() > 0`. Counts calls. */
function injectBefore(client: DynamoDBClient, match: Matcher, makeError: () => Error, times = Infinity) {
  const state = { calls: 0, injected: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (match(context.commandName ?? '', args.input as Record<string, unknown>)) {
        state.calls++;
        if (state.injected < times) {
          state.injected++;
          throw makeError();
        }
      }
      return next(args);
    },
    { step: 'initialize', name: 'injectBefore' },
  );
  return state;
}

const serviceError =
  (name: string, extra: Record<string, unknown> = {}) =>
  () =>
    Object.assign(new Error(name), { name, $fault: 'client', $metadata: { httpStatusCode: 400 }, ...extra });

const isCommand =
  (name: string): Matcher =>
  (cmd) =>
    cmd === name;
const summary: Item = { role: 'assistant', content: 'summary' };
const isTransaction = isCommandName('TransactWriteItemsCommand');
function isCommandName(name: string): Matcher {
  return (cmd) => cmd === name;
}
const fastRetry = { baseDelayMs: 5, maxDelayMs: 20 };

describe('bounded retries', () => {
  /** Answers like DynamoDB under throttling, below the SDK's retry step, so the SDK's standard strategy sees it. */
  function throttleBelowRetries(client: DynamoDBClient, command: string, times: number) {
    const state = { sent: 0 };
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === command && state.sent++ < times) {
          throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
            name: 'ProvisionedThroughputExceededException',
            $fault: 'client',
            $metadata: { httpStatusCode: 400 },
          });
        }
        return next(args);
      },
      { step: 'deserialize', name: `throttle-${times}` },
    );
    return state;
  }

  it('throttling is retried by the SDK (3 attempts) and then surfaces as StoreRetryableError, not a 500', async () => {
    const client = faultyClient();
    const store = makeStore(client, { retry: fastRetry });
    const ref = await newSession(store, []);
    const state = throttleBelowRetries(client, 'GetItemCommand', 99);
    const err = await store.getSession(ref).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreRetryableError);
    expect((err as StoreRetryableError).retryable).toBe(true);
    expect(((err as StoreRetryableError).cause as Error).name).toBe('ProvisionedThroughputExceededException');
    expect(state.sent).toBe(3);
  });

  it("a throttle that clears within the SDK's attempts is invisible to the caller", async () => {
    const client = faultyClient();
    const store = makeStore(client, { retry: fastRetry });
    const ref = await newSession(store, []);
    const state = throttleBelowRetries(client, 'UpdateItemCommand', 2);
    await expect(begin(store, ref)).resolves.toMatchObject({ attempt: { fence: 1 } });
    expect(state.sent).toBe(3);
  });

  it('TransactionConflict is retried then surfaces as StoreRetryableError; nothing was appended', async () => {
    const client = faultyClient();
    const store = makeStore(client, { retry: fastRetry });
    const ref = await newSession(store, [msg(1)]);
    const state = injectBefore(
      client,
      isCommand('TransactWriteItemsCommand'),
      serviceError('TransactionCanceledException', { CancellationReasons: [{ Code: 'TransactionConflict' }, { Code: 'None' }] }),
    );
    await expect(append(store, ref, [msg(2)])).rejects.toBeInstanceOf(StoreRetryableError);
    expect(state.calls).toBe(5);
    expect(await makeStore().readAll(ref)).toEqual([msg(1)]);
  });

  it('TransactionConflictException on a commit is retried and the commit then succeeds', async () => {
    const client = faultyClient();
    const store = makeStore(client, { retry: fastRetry });
    const ref = await newSession(store);
    const begun = await begin(store, ref);
    const state = injectBefore(client, isCommand('TransactWriteItemsCommand'), serviceError('TransactionConflictException'), 3);
    const out = await store.commitRotation(ref, begun, commitInput([summary]));
    expect(state.calls).toBe(4);
    expect(out.child.sessionId).toBe(begun.attempt.pendingChildId);
  });
});

describe('lost commit responses', () => {
  /** Lets the matching request reach DynamoDB Local, then throws a network error instead of its response, once. */
  function loseResponseOnce(client: DynamoDBClient, match: Matcher) {
    const state = { lost: 0 };
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        if (state.lost === 0 && match(context.commandName ?? '', args.input as Record<string, unknown>)) {
          state.lost++;
          throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
        }
        return result;
      },
      { step: 'deserialize', name: 'loseResponseOnce' },
    );
    return state;
  }

  it('I4: an append that committed but answered InternalServerError is retried without appending twice', async () => {
    const client = faultyClient();
    const store = makeStore(client, { retry: fastRetry });
    const ref = await newSession(store, msgs(1, 2));
    const state = { lost: 0 };
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        if (state.lost === 0 && context.commandName === 'TransactWriteItemsCommand') {
          state.lost++;
          // DynamoDB documents that a transaction answered with a 500 may still have gone through.
          throw serviceError('InternalServerError', { $fault: 'server', $metadata: { httpStatusCode: 500 } })();
        }
        return result;
      },
      { step: 'deserialize', name: 'commitThen500' },
    );
    const out = await store.appendItems(ref, { prepare: () => ({ items: msgs(3, 4), tokenEstimates: [1, 1] }) });
    expect(state.lost).toBe(1);
    expect(out).toMatchObject({ replayed: false, appended: 2 });
    expect(await store.readAll(ref)).toEqual(msgs(1, 4));
  });

  it('C10/I2: a rotation that committed but whose response was lost is detected and reported as success, one child', async () => {
    const client = faultyClient();
    const store = makeStore(client);
    const ref = await newSession(store, msgs(1, 4));
    const begun = await begin(store, ref);
    const state = loseResponseOnce(client, isCommand('TransactWriteItemsCommand'));

    const out = await store.commitRotation(ref, begun, commitInput([summary]));
    expect(state.lost).toBe(1);
    expect(out.child.sessionId).toBe(begun.attempt.pendingChildId);
    expect(out.items).toEqual([summary]);
    const children = await store.children(ref);
    expect(children.map((c) => c.sessionId)).toEqual([begun.attempt.pendingChildId]);
    // The child's items were not cleaned up as if the commit had failed.
    expect(await store.readAll({ tenantId: ref.tenantId, sessionId: out.child.sessionId })).toEqual([summary]);
    // A caller retrying the same attempt is told the same thing.
    const again = await store.commitRotation(ref, begun, commitInput([summary]));
    expect(again.child.sessionId).toBe(out.child.sessionId);
    expect(await store.children(ref)).toHaveLength(1);
  });

  it('C11: an in-place flip whose response was lost is detected and reported as success', async () => {
    const client = faultyClient();
    const store = makeStore(client);
    const ref = await newSession(store, msgs(1, 4));
    const begun = await begin(store, ref);
    const state = loseResponseOnce(client, isTransaction);
    const out = await store.commitInPlace(ref, begun, commitInput([summary]));
    expect(state.lost).toBe(1);
    expect(out.items).toEqual([summary]);
    expect(await store.readAll(ref)).toEqual([summary]);
  });
});

describe('a newer attempt begins mid-commit (L6)', () => {
  /** Runs `action` (once) just before the matching request is sent. */
  function beforeSending(client: DynamoDBClient, match: Matcher, action: () => Promise<unknown>) {
    let done = false;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (!done && match(context.commandName ?? '', args.input as Record<string, unknown>)) {
          done = true;
          await action();
        }
        return next(args);
      },
      { step: 'initialize', name: 'beforeSending' },
    );
  }

  /** Compacted items more than these stores' transactions carry, so the commit writes them before its flip. */
  const many = Array.from({ length: 120 }, (_, k): Item => ({ role: 'assistant', content: `kept ${k}` }));
  const smallTransactions = { transactionBytes: 2_000 };

  it('L6/C10: rotation after its child items were written is refused; the pending child items are deleted', async () => {
    const client = faultyClient();
    const store = makeStore(client, smallTransactions);
    const other = makeStore();
    const ref = await newSession(store, msgs(1, 4));
    const a = await begin(store, ref, 'A', -1);
    let b: Awaited<ReturnType<typeof begin>> | undefined;
    beforeSending(client, isTransaction, async () => {
      b = await begin(other, ref, 'B');
    });
    await expect(store.commitRotation(ref, a, commitInput(many))).rejects.toBeInstanceOf(FenceStaleError);
    expect(await rawItems(client, { tenantId: ref.tenantId, sessionId: a.attempt.pendingChildId })).toEqual([]);
    expect((await other.getSession(ref))?.attempt?.attemptId).toBe(b?.attempt.attemptId);
    expect(await other.readAll(ref)).toEqual(msgs(1, 4));
    expect(await other.children(ref)).toEqual([]);
  });

  it('L6/C11: an in-place flip after its new generation was written is refused; the new generation is deleted', async () => {
    const client = faultyClient();
    const store = makeStore(client, smallTransactions);
    const other = makeStore();
    const ref = await newSession(store, msgs(1, 4));
    const a = await begin(store, ref, 'A', -1);
    beforeSending(client, isTransaction, () => begin(other, ref, 'B'));
    await expect(store.commitInPlace(ref, a, commitInput(many))).rejects.toBeInstanceOf(FenceStaleError);
    const items = await storedItems(client, ref);
    expect(items.map((i) => i.generation)).toEqual([0, 0, 0, 0]);
    expect(await other.readAll(ref)).toEqual(msgs(1, 4));
  });

  it("I4: an append landing before a pre-written rotation's transaction is carried into the child", async () => {
    const client = faultyClient();
    const store = makeStore(client, smallTransactions);
    const other = makeStore();
    const ref = await newSession(store, msgs(1, 4));
    const a = await begin(store, ref);
    await append(other, ref, [msg(5)]);
    beforeSending(client, isTransaction, () => append(other, ref, [msg(6)]));
    const out = await store.commitRotation(ref, a, commitInput(many));
    expect(out.tailCarried).toBe(2);
    expect(await other.readAll({ tenantId: ref.tenantId, sessionId: out.child.sessionId })).toEqual([...many, msg(5), msg(6)]);
  });

  it('S3/C10: the sweep cleaning the attempt between its item writes and its transaction makes the commit fail cleanly', async () => {
    const client = faultyClient();
    const store = makeStore(client, smallTransactions);
    const sweeper = makeStore();
    const ref = await newSession(store, msgs(1, 4));
    const a = await begin(store, ref);
    beforeSending(client, isTransaction, () => sweeper.cleanExpiredAttempt({ ref, attempt: a.attempt }));
    await expect(store.commitRotation(ref, a, commitInput(many))).rejects.toBeInstanceOf(FenceStaleError);
    expect(await sweeper.children(ref)).toEqual([]);
    expect(await rawItems(client, { tenantId: ref.tenantId, sessionId: a.attempt.pendingChildId })).toEqual([]);
    expect(await sweeper.readAll(ref)).toEqual(msgs(1, 4));
    expect((await sweeper.getSession(ref))?.endedAt).toBeUndefined();
  });
});

describe('sustained appends (issue 11: a seal bounds the commit)', () => {
  /** Before every transaction the committing client sends, another process starts an append and gives it 150 ms to land. */
  function appendBeforeEveryTransaction(client: DynamoDBClient, ref: Parameters<typeof append>[1]) {
    const other = makeStore();
    const state = { transactions: 0, landed: [] as number[], refused: [] as unknown[] };
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'TransactWriteItemsCommand') {
          const n = 100 + state.transactions++;
          const appended = append(other, ref, [msg(n)]).then(
            () => state.landed.push(n),
            (e: unknown) => state.refused.push(e),
          );
          // Under a seal the append waits for it to lift, so this wait times out and the commit goes ahead.
          await Promise.race([appended, new Promise((r) => setTimeout(r, 150))]);
        }
        return next(args);
      },
      { step: 'initialize', name: 'appendBeforeEveryTransaction' },
    );
    return state;
  }

  it('I4: in place, an append before every commit transaction: the commit still lands within 3 transactions; every append lands once', async () => {
    const client = faultyClient();
    const store = makeStore(client);
    const ref = await newSession(store, msgs(1, 4));
    const a = await begin(store, ref);
    const state = appendBeforeEveryTransaction(client, ref);
    const out = await store.commitInPlace(ref, a, commitInput([summary]));
    expect(state.transactions).toBeLessThanOrEqual(3);
    await expect.poll(() => state.landed.length + state.refused.length, { timeout: 10_000 }).toBe(state.transactions);
    expect(state.refused).toEqual([]);
    const final = await makeStore().readAll(ref);
    // Appends that beat the seal are in the carried tail; the one held back by the seal landed after the flip.
    expect(final.slice(0, out.items.length)).toEqual(out.items);
    expect(
      final
        .filter((m) => (m.content as string).startsWith('message 1'))
        .map((m) => m.content)
        .sort(),
    ).toEqual(state.landed.map((n) => `message ${n}`).sort());
  });

  it('I4/F1: rotating, the append held back by the seal is refused afterwards naming the new child (never lost)', async () => {
    const client = faultyClient();
    const store = makeStore(client);
    const ref = await newSession(store, msgs(1, 4));
    const a = await begin(store, ref);
    const state = appendBeforeEveryTransaction(client, ref);
    const out = await store.commitRotation(ref, a, commitInput([summary]));
    expect(state.transactions).toBeLessThanOrEqual(3);
    await expect.poll(() => state.landed.length + state.refused.length, { timeout: 10_000 }).toBe(state.transactions);
    for (const e of state.refused) {
      expect(e).toBeInstanceOf(SessionEndedError);
      expect((e as SessionEndedError).liveSessionId).toBe(out.child.sessionId);
    }
    expect(out.items.slice(1).map((m) => m.content)).toEqual(state.landed.map((n) => `message ${n}`));
  });
});
