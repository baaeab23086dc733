// Faults DynamoDB Local cannot produce on demand, injected with client middleware on REAL clients:
// throttling and transaction conflicts (bounded retries, then StoreRetryableError), a commit whose
// response was lost after it committed (detected, reported as success), and a newer attempt beginning
// between a commit's message writes and its conditional flip (SPEC I1, I2, C10, C11, L6).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { FenceStaleError, StoreRetryableError } from '../../../lib/lineage/index.js';
import type { Message } from '../../../lib/messages.js';
import { begin, dynamoClient, makeStore, msg, msgs, newSession, rawItems } from './support.js';

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

const serviceError = (name: string, extra: Record<string, unknown> = {}) => () =>
  Object.assign(new Error(name), { name, $fault: 'client', $metadata: { httpStatusCode: 400 }, ...extra });

const isCommand = (name: string): Matcher => (cmd) => cmd === name;
const summary: Message = { role: 'user', content: 'summary' };
const fastRetry = { baseDelayMs: 5, maxDelayMs: 20 };

describe('bounded retries', () => {
  it('throttling is retried with backoff and surfaces as StoreRetryableError after 5 tries', async () => {
    const client = faultyClient();
    const store = makeStore(client, { retry: fastRetry });
    const ref = await newSession(store, []);
    const state = injectBefore(client, isCommand('GetItemCommand'), serviceError('ThrottlingException'));
    const err = await store.getSession(ref).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreRetryableError);
    expect((err as StoreRetryableError).retryable).toBe(true);
    expect(((err as StoreRetryableError).cause as Error).name).toBe('ThrottlingException');
    expect(state.calls).toBe(5);
  });

  it('a throttle that clears within the budget is invisible to the caller', async () => {
    const client = faultyClient();
    const store = makeStore(client, { retry: fastRetry });
    const ref = await newSession(store, []);
    const state = injectBefore(client, isCommand('UpdateItemCommand'), serviceError('ProvisionedThroughputExceededException'), 2);
    await expect(store.nextFence(`${ref.tenantId}/${ref.sessionId}`)).resolves.toBe(1);
    expect(state.calls).toBe(3);
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
    await expect(store.appendMessages(ref, [msg(2)])).rejects.toBeInstanceOf(StoreRetryableError);
    expect(state.calls).toBe(5);
    expect(await makeStore().readMessages(ref)).toEqual([msg(1)]);
  });

  it('TransactionConflictException on a commit is retried and the commit then succeeds', async () => {
    const client = faultyClient();
    const store = makeStore(client, { retry: fastRetry });
    const ref = await newSession(store);
    const begun = await begin(store, ref);
    const state = injectBefore(client, isCommand('TransactWriteItemsCommand'), serviceError('TransactionConflictException'), 3);
    const out = await store.commitRotation(ref, begun.attempt, [summary]);
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
    const out = await store.appendMessages(ref, msgs(3, 4));
    expect(state.lost).toBe(1);
    expect(out.appended).toBe(2);
    expect(await store.readMessages(ref)).toEqual(msgs(1, 4));
  });

  it('C10/I2: a rotation that committed but whose response was lost is detected and reported as success, one child', async () => {
    const client = faultyClient();
    const store = makeStore(client);
    const ref = await newSession(store, msgs(1, 4));
    const begun = await begin(store, ref);
    const state = loseResponseOnce(client, isCommand('TransactWriteItemsCommand'));

    const out = await store.commitRotation(ref, begun.attempt, [summary]);
    expect(state.lost).toBe(1);
    expect(out.child.sessionId).toBe(begun.attempt.pendingChildId);
    expect(out.messages).toEqual([summary]);
    const children = await store.children(ref);
    expect(children.map((c) => c.sessionId)).toEqual([begun.attempt.pendingChildId]);
    // The child's messages were not cleaned up as if the commit had failed.
    expect(await store.readMessages({ tenantId: ref.tenantId, sessionId: out.child.sessionId })).toEqual([summary]);
    // A caller retrying the same attempt is told the same thing.
    const again = await store.commitRotation(ref, begun.attempt, [summary]);
    expect(again.child.sessionId).toBe(out.child.sessionId);
    expect(await store.children(ref)).toHaveLength(1);
  });

  it('C11: an in-place flip whose response was lost is detected and reported as success', async () => {
    const client = faultyClient();
    const store = makeStore(client);
    const ref = await newSession(store, msgs(1, 4));
    const begun = await begin(store, ref);
    const state = loseResponseOnce(client, (cmd, input) => cmd === 'UpdateItemCommand' && String(input.UpdateExpression).includes('#generation'));
    const out = await store.commitInPlace(ref, begun.attempt, [summary]);
    expect(state.lost).toBe(1);
    expect(out.messages).toEqual([summary]);
    expect(await store.readMessages(ref)).toEqual([summary]);
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

  it('L6/C10: rotation after its child messages were written is refused; the pending child messages are deleted', async () => {
    const client = faultyClient();
    const store = makeStore(client);
    const other = makeStore();
    const ref = await newSession(store, msgs(1, 4));
    const a = await begin(store, ref, 'A');
    let b: Awaited<ReturnType<typeof begin>> | undefined;
    beforeSending(client, isCommand('TransactWriteItemsCommand'), async () => {
      b = await begin(other, ref, 'B');
    });
    await expect(store.commitRotation(ref, a.attempt, [summary, msg(4)])).rejects.toBeInstanceOf(FenceStaleError);
    expect(await rawItems(client, { tenantId: ref.tenantId, sessionId: a.attempt.pendingChildId })).toEqual([]);
    expect((await other.getSession(ref))?.attempt?.attemptId).toBe(b?.attempt.attemptId);
    expect(await other.readMessages(ref)).toEqual(msgs(1, 4));
    expect(await other.children(ref)).toEqual([]);
  });

  it('L6/C11: an in-place flip after its new generation was written is refused; the new generation is deleted', async () => {
    const client = faultyClient();
    const store = makeStore(client);
    const other = makeStore();
    const ref = await newSession(store, msgs(1, 4));
    const a = await begin(store, ref, 'A');
    beforeSending(
      client,
      (cmd, input) => cmd === 'UpdateItemCommand' && String(input.UpdateExpression).includes('#generation'),
      () => begin(other, ref, 'B'),
    );
    await expect(store.commitInPlace(ref, a.attempt, [summary])).rejects.toBeInstanceOf(FenceStaleError);
    const items = (await rawItems(client, ref)).filter((i) => String(i.sk).startsWith('MSG#'));
    expect(items.map((i) => i.generation)).toEqual([0, 0, 0, 0]);
    expect(await other.readMessages(ref)).toEqual(msgs(1, 4));
  });

  it('I4: an append landing between the tail read and the rotation transaction is carried into the child', async () => {
    const client = faultyClient();
    const store = makeStore(client);
    const other = makeStore();
    const ref = await newSession(store, msgs(1, 4));
    const a = await begin(store, ref);
    await other.appendMessages(ref, [msg(5)]);
    beforeSending(client, isCommand('TransactWriteItemsCommand'), () => other.appendMessages(ref, [msg(6)]));
    const out = await store.commitRotation(ref, a.attempt, [summary]);
    expect(out.tailCarried).toBe(2);
    expect(await other.readMessages({ tenantId: ref.tenantId, sessionId: out.child.sessionId })).toEqual([summary, msg(5), msg(6)]);
  });

  it('I4: an append landing between the tail read and the in-place flip is carried into the new generation', async () => {
    const client = faultyClient();
    const store = makeStore(client);
    const other = makeStore();
    const ref = await newSession(store, msgs(1, 4));
    const a = await begin(store, ref);
    beforeSending(
      client,
      (cmd, input) => cmd === 'UpdateItemCommand' && String(input.UpdateExpression).includes('#generation'),
      () => other.appendMessages(ref, [msg(5)]),
    );
    const out = await store.commitInPlace(ref, a.attempt, [summary]);
    expect(out.tailCarried).toBe(1);
    expect(await other.readMessages(ref)).toEqual([summary, msg(5)]);
  });

  it('S3/C10: the sweep cleaning the attempt between its child-message writes and its transaction makes the commit fail cleanly', async () => {
    const client = faultyClient();
    const store = makeStore(client);
    const sweeper = makeStore();
    const ref = await newSession(store, msgs(1, 4));
    const a = await begin(store, ref);
    beforeSending(client, isCommand('TransactWriteItemsCommand'), () => sweeper.cleanExpiredAttempt({ ref, attempt: a.attempt }));
    await expect(store.commitRotation(ref, a.attempt, [summary])).rejects.toBeInstanceOf(FenceStaleError);
    expect(await sweeper.children(ref)).toEqual([]);
    expect(await rawItems(client, { tenantId: ref.tenantId, sessionId: a.attempt.pendingChildId })).toEqual([]);
    expect(await sweeper.readMessages(ref)).toEqual(msgs(1, 4));
    expect((await sweeper.getSession(ref))?.endedAt).toBeUndefined();
  });
});

