// Defect: DELETE /sessions/{id}/messages/last answers 500 when the in-flight attempt it saw
// ends (no-op, skip, failure: abandonAttempt) between the pop's read and its transaction.
//
// popLast reads the record, sees an attempt whose watermark covers the last item, and sends
// `SET #attempt.#stale = :true` conditioned only on the version. Clearing an attempt
// (Attempts.clear: REMOVE #attempt ...) does not bump the version, so the condition still
// holds, and DynamoDB refuses the update expression itself ("The document path provided in the
// update expression is invalid for update", a ValidationException), which the API maps to 500.
// Seen in a storm: `pop 500 internal` while no-op / skipped compactions ran on the session.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { begin, dynamoClient, makeStore, msg, msgs, newSession } from './support.js';

const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));

describe('pop racing the end of an attempt (A6, F1; found by the adversarial pass)', () => {
  it('A6/F1: a pop whose snapshot-covered item meets an attempt that is abandoned meanwhile still pops (no 5xx)', async () => {
    const other = makeStore();
    const client = dynamoClient();
    clients.push(client);
    let hook: (() => Promise<void>) | undefined;
    // Runs `hook` once, just before the pop's transaction is sent (after popLast read the record).
    client.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { TransactItems?: { Delete?: unknown; Update?: { UpdateExpression?: string } }[] };
        if (
          hook &&
          input.TransactItems?.some((t) => t.Delete) &&
          input.TransactItems.some((t) => t.Update?.UpdateExpression?.includes('#stale'))
        ) {
          const h = hook;
          hook = undefined;
          await h();
        }
        return next(args);
      },
      { step: 'initialize', name: 'adversarialBeforePop' },
    );
    const store = makeStore(client);
    const ref = await newSession(other, msgs(1, 5));
    const begun = await begin(other, ref);
    // The compaction decides "no-op" (or is skipped / fails) and abandons its attempt while the pop is in flight.
    hook = () => other.abandonAttempt(ref, begun.attempt, { activityLabel: 'compaction completed' });
    const popped = await store.popLast(ref);
    expect(popped.removed).toEqual(msg(5));
    expect(await other.readAll(ref)).toEqual(msgs(1, 4));
  });
});
