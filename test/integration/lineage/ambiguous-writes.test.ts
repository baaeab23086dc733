// Defect (adversarial pass 3): a write whose transaction DynamoDB applied but never confirmed was
// answered 503 `unavailable`, the service's "nothing was applied, retry" answer.
//
// A SIGSTOPped DynamoDB receives the pop's TransactWriteItems (and the SDK's resends, one
// ClientRequestToken) but answers none within the SDK's tries; withRetry turns the TimeoutError
// into StoreRetryableError, the API into 503 `unavailable`. On SIGCONT DynamoDB applies the pop.
// The client (lib/client/transport.ts) retries a `once` request (pop, in-place compaction) after
// the service's own 503, so the retry pops a second item: an acknowledged append is gone (I4, A6).
// The same 503 answered an append without an Idempotency-Key whose items landed (seen in a storm
// with DynamoDB Local SIGSTOPped for 12 s: `unackedButStored`).
// Issue 22, item 1: so is every other write that may land unconfirmed (session and conversation
// create and delete): 503 `outcome_unknown`, never `unavailable`.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { fromDomainError } from '../../../lib/api/errors.js';
import { StoreOutcomeUnknownError } from '../../../lib/lineage/errors.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import { begin, commitInput, dynamoClient, makeStore, msg, msgs, newSession } from './support.js';

const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));

/** A client whose matching transactions reach DynamoDB (and apply) but whose answers never arrive. */
function losingAnswers(match: (input: { TransactItems?: { Delete?: unknown; Put?: unknown }[] }) => boolean): DynamoDBClient {
  const client = dynamoClient();
  clients.push(client);
  client.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as { TransactItems?: { Delete?: unknown; Put?: unknown }[] };
      if (!match(input)) return next(args);
      await next(args);
      throw Object.assign(new Error('Connection timed out after 5000 ms'), { name: 'TimeoutError' });
    },
    { step: 'initialize', name: 'adversarialLostAnswer' },
  );
  return client;
}

/**
 * Issue 22, finding 1: the commit transaction applies but its answer is lost, and the read that
 * should verify it times out as well (DynamoDB Local SIGSTOPped mid-commit).
 */
function stalledAfterCommit(): DynamoDBClient {
  const client = dynamoClient();
  clients.push(client);
  let committed = false;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand' && !committed) {
        await next(args);
        committed = true;
        throw Object.assign(new Error('Connection timed out after 5000 ms'), { name: 'TimeoutError' });
      }
      if (committed && context.commandName === 'GetItemCommand') {
        throw Object.assign(new Error('Connection timed out after 5000 ms'), { name: 'TimeoutError' });
      }
      return next(args);
    },
    { step: 'initialize', name: 'adversarialStalledVerification' },
  );
  return client;
}

describe('writes DynamoDB applied without confirming them (I4, A6, F1; found by the adversarial pass)', () => {
  for (const mode of ['rotate', 'in_place'] as const) {
    it(`I2 F1: a ${mode} commit applied unconfirmed whose verification read also times out stays 503 outcome_unknown, never "unavailable"`, async () => {
      const direct = makeStore();
      const ref = await newSession(direct, msgs(1, 6));
      const store = makeStore(stalledAfterCommit());
      const begun = await begin(store, ref);
      const input = commitInput([msg(100)]);
      const err = await (mode === 'rotate' ? store.commitRotation(ref, begun, input) : store.commitInPlace(ref, begun, input)).catch(
        (e: unknown) => e,
      );
      // The compaction did go through.
      if (mode === 'rotate') expect(await direct.children(ref)).toHaveLength(1);
      else expect((await direct.readAll(ref))[0]).toEqual(msg(100));
      expect(err).toBeInstanceOf(StoreOutcomeUnknownError);
      const http = fromDomainError(err);
      expect(http?.status).toBe(503);
      expect(http?.code).toBe('outcome_unknown');
    });
  }

  it('A6/I4: a pop whose transaction applied but was never confirmed is not answered "nothing applied" (503 unavailable)', async () => {
    const direct = makeStore();
    const ref = await newSession(direct, msgs(1, 5));
    // A pop's transaction deletes or shrinks the row of the last item.
    const store = makeStore(
      losingAnswers(
        (i) =>
          !!i.TransactItems?.some((t) => t.Delete ?? (t as { Update?: { Key?: { sk?: string } } }).Update?.Key?.sk?.startsWith('MSG#')),
      ),
    );
    const err = await store.popLast(ref).catch((e: unknown) => e);
    // The pop did happen.
    expect(await direct.readAll(ref)).toEqual(msgs(1, 4));
    expect(err).toBeInstanceOf(StoreOutcomeUnknownError);
    const http = fromDomainError(err);
    expect(http?.status).toBe(503);
    expect(http?.code).toBe('outcome_unknown');
    expect(http?.code).not.toBe('unavailable');
  });

  it('I4: an append without a key whose transaction applied unconfirmed says the outcome is unknown', async () => {
    const direct = makeStore();
    const ref = await newSession(direct, msgs(1, 2));
    const store = makeStore(losingAnswers((i) => !!i.TransactItems?.some((t) => t.Put)));
    const err = await store.appendItems(ref, { prepare: asIs([msg(3)]) }).catch((e: unknown) => e);
    expect(await direct.readAll(ref)).toEqual(msgs(1, 3));
    expect(fromDomainError(err)?.code).toBe('outcome_unknown');
  });

  /** A tombstone's update (a session's delete, or one session of a conversation's). */
  const tombstones = (i: { TransactItems?: unknown[] }) =>
    !!(i.TransactItems as { Update?: { UpdateExpression?: string } }[] | undefined)?.some((t) =>
      t.Update?.UpdateExpression?.startsWith('SET #deletedAt'),
    );
  const anyTransaction = (i: { TransactItems?: unknown[] }) => i.TransactItems !== undefined;
  const isOutcomeUnknown = (err: unknown) => {
    expect(err).toBeInstanceOf(StoreOutcomeUnknownError);
    expect(fromDomainError(err)).toMatchObject({ status: 503, code: 'outcome_unknown' });
  };

  it('A6 F1: DELETE /sessions/{id} whose transaction applied unconfirmed is 503 outcome_unknown, not "unavailable"', async () => {
    const direct = makeStore();
    const ref = await newSession(direct, msgs(1, 3));
    const err = await makeStore(losingAnswers(tombstones))
      .deleteSession(ref)
      .catch((e: unknown) => e);
    expect(await direct.getSession(ref)).toBeNull();
    isOutcomeUnknown(err);
  });

  for (const keyed of [false, true]) {
    it(`F1 K1: POST /sessions${keyed ? ' with an Idempotency-Key' : ''} whose transaction applied unconfirmed is 503 outcome_unknown, not "unavailable"`, async () => {
      const ref = { tenantId: `t-${randomUUID()}`, sessionId: randomUUID() };
      const err = await makeStore(losingAnswers(anyTransaction))
        .createSession({ ...ref, ...(keyed ? { idempotency: { key: randomUUID(), requestHash: 'h' } } : {}) })
        .catch((e: unknown) => e);
      expect(await makeStore().getSession(ref)).not.toBeNull();
      isOutcomeUnknown(err);
    });
  }

  it('K1 F1: PUT /conversations/{id} whose create applied unconfirmed is 503 outcome_unknown, not "unavailable"', async () => {
    const tenantId = `t-${randomUUID()}`;
    const err = await makeStore(losingAnswers(anyTransaction))
      .ensureConversation({ tenantId, conversationId: 'c-1' }, false)
      .catch((e: unknown) => e);
    expect(await makeStore().getConversation(tenantId, 'c-1')).not.toBeNull();
    isOutcomeUnknown(err);
  });

  it('K3 F1: DELETE /conversations/{id} whose transaction applied unconfirmed is 503 outcome_unknown, not "unavailable"', async () => {
    const direct = makeStore();
    const tenantId = `t-${randomUUID()}`;
    const created = await direct.ensureConversation({ tenantId, conversationId: 'c-1' }, false);
    const err = await makeStore(losingAnswers(tombstones))
      .deleteConversation(tenantId, 'c-1')
      .catch((e: unknown) => e);
    expect(await direct.getConversation(tenantId, 'c-1')).toBeNull();
    expect(await direct.getSession({ tenantId, sessionId: created.conversation.rootSessionId })).toBeNull();
    isOutcomeUnknown(err);
  });

  it('a write refused before DynamoDB saw it (connection refused) stays 503 unavailable: nothing was applied', async () => {
    const direct = makeStore();
    const ref = await newSession(direct, msgs(1, 3));
    const client = dynamoClient();
    clients.push(client);
    client.middlewareStack.add(
      () => () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { name: 'Error', code: 'ECONNREFUSED' })),
      { step: 'initialize', name: 'adversarialRefused' },
    );
    const err = await makeStore(client)
      .popLast(ref)
      .catch((e: unknown) => e);
    expect(fromDomainError(err)?.code).toBe('unavailable');
    expect(await direct.readAll(ref)).toEqual(msgs(1, 3));
  });
});
