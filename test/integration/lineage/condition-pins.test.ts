// Issue 22: the DynamoDB conditions no other test pinned. Each test puts a rival write between
// our read and our write, deterministically (client middleware runs it before or around the
// request it names; no sleeps), and fails when the clause it names is removed alone (checked):
// - commitCondition's `attribute_not_exists(#attempt.#stale)` in the sealed round (commit.ts);
// - the pop's version clause (sessions.ts popLast);
// - UNSEALED in the append and in the pop (sessions.ts): the seal must hold, so its round commits.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import type { Item } from '../../../lib/items/types.js';
import { StaleSnapshotError } from '../../../lib/lineage/errors.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { BegunAttempt } from '../../../lib/lineage/types.js';
import { append, begin, commitInput, dynamoClient, makeStore, msg, msgs, newSession, rawItems } from './support.js';

const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));

interface Input {
  TransactItems?: { Update?: { UpdateExpression?: string } }[];
  UpdateExpression?: string;
}
type Match = (input: Input) => boolean;

const isTransaction: Match = (i) => i.TransactItems !== undefined;
/** The commit's seal update (commit.ts seal()). */
const isSeal: Match = (i) => (i.UpdateExpression ?? '').startsWith('SET #seal');
/** A pop's transaction (sessions.ts popLast). */
const isPop: Match = (i) => !!i.TransactItems?.some((t) => t.Update?.UpdateExpression?.startsWith('ADD #messageCount :minus'));

interface Step {
  match: Match;
  /** Runs once the request is about to be sent. */
  before?: () => Promise<unknown>;
  /** Runs once DynamoDB answered it. */
  after?: () => Promise<unknown>;
}

/** A client that runs each step around the first request it matches after the step before; counts transactions. */
function scripted(...steps: Step[]): { client: DynamoDBClient; sent: { transactions: number } } {
  const client = dynamoClient();
  clients.push(client);
  const sent = { transactions: 0 };
  client.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as Input;
      if (isTransaction(input)) sent.transactions++;
      const step = steps[0];
      if (!step?.match(input)) return next(args);
      steps.shift();
      await step.before?.();
      const out = await next(args);
      await step.after?.();
      return out;
    },
    { step: 'initialize', name: 'scripted' },
  );
  return { client, sent };
}

/**
 * A rival store whose first transaction is held back: `ready` once the rival has read what it
 * needs and is about to write, sent on `release()`, `written` once DynamoDB answered it.
 */
function heldRival() {
  const client = dynamoClient();
  clients.push(client);
  let release!: () => void;
  let ready!: () => void;
  let written!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const rival = {
    store: makeStore(client),
    ready: new Promise<void>((r) => (ready = r)),
    written: new Promise<void>((r) => (written = r)),
    release,
  };
  let held = false;
  client.middlewareStack.add(
    (next) => async (args) => {
      if (held || !isTransaction(args.input as Input)) return next(args);
      held = true;
      ready();
      await released;
      try {
        return await next(args);
      } finally {
        written();
      }
    },
    { step: 'initialize', name: 'heldRival' },
  );
  return rival;
}

const summary: Item = { role: 'assistant', content: 'summary' };
/** Settles a rival's operation for a later look, without an unhandled rejection meanwhile. */
const settled = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe('A6: a pop that made the snapshot stale just before the seal (commit.ts commitCondition, sealed round)', () => {
  for (const [path, opts] of [
    ['inline', {}],
    ['write-first', { transactionBytes: 10 }],
  ] as const) {
    for (const mode of ['rotate', 'in_place'] as const) {
      it(`A6: ${mode}, ${path}: append before transaction 1, its pop before transaction 2, a pop of a snapshotted item before the seal: the sealed round refuses to commit the popped item back`, async () => {
        const other = makeStore();
        const ref = await newSession(other, msgs(1, 4));
        const { client, sent } = scripted(
          { match: isTransaction, before: () => append(other, ref, [msg(5)]) },
          // Item 5 is after the watermark: nothing stale, only the version moved.
          { match: isTransaction, before: () => other.popLast(ref) },
          // Item 4 is snapshotted: the attempt is marked stale, and the seal takes the record as it stands.
          { match: isSeal, before: () => other.popLast(ref) },
        );
        const store = makeStore(client, opts);
        const a = await begin(store, ref);
        const input = commitInput(msgs(1, 4));
        const commit = mode === 'rotate' ? store.commitRotation(ref, a, input) : store.commitInPlace(ref, a, input);
        await expect(commit).rejects.toBeInstanceOf(StaleSnapshotError);
        // The sealed round was sent, and refused by its condition.
        expect(sent.transactions).toBe(3);
        expect(await other.readAll(ref)).toEqual(msgs(1, 3));
        expect(await other.children(ref)).toEqual([]);
        expect(await rawItems(client, { tenantId: ref.tenantId, sessionId: a.attempt.pendingChildId })).toEqual([]);
      });
    }
  }
});

describe("A6: writes between a pop's read and its write (sessions.ts popLast, version clause)", () => {
  it("A6: a begin between a pop's read and its write: the pop marks the snapshot stale, so the commit cannot bring the popped item back", async () => {
    const other = makeStore();
    const ref = await newSession(other, msgs(1, 5));
    let b: BegunAttempt | undefined;
    const { client } = scripted({
      match: isPop,
      before: async () => {
        b = await begin(other, ref);
      },
    });
    const popped = await makeStore(client).popLast(ref);
    expect(popped.removed).toEqual(msg(5));
    await expect(other.commitInPlace(ref, b!, commitInput(msgs(1, 5)))).rejects.toBeInstanceOf(StaleSnapshotError);
    expect(await other.readAll(ref)).toEqual(msgs(1, 4));
  });

  it("A6: an append between a pop's read and its write: the pop removes the new last item, never the one before it", async () => {
    const other = makeStore();
    const ref = await newSession(other, msgs(1, 5));
    const { client } = scripted({ match: isPop, before: () => append(other, ref, [msg(6)]) });
    const popped = await makeStore(client).popLast(ref);
    expect(popped.removed).toEqual(msg(6));
    expect(await other.readAll(ref)).toEqual(msgs(1, 5));
  });
});

describe('I4 C10: a write that read the record before the seal and is sent during it waits (sessions.ts UNSEALED)', () => {
  /**
   * Two appends make the commit's first two transactions lose (the second loss raises the seal);
   * the rival reads the record before the seal update and sends its write just after it landed.
   */
  function sealedCommit(rivalWrite: (rival: ReturnType<typeof heldRival>['store']) => Promise<unknown>, other = makeStore()) {
    const rival = heldRival();
    const done: { rival?: Promise<{ value?: unknown; error?: unknown }> } = {};
    const script = (ref: Parameters<typeof append>[1]) =>
      scripted(
        { match: isTransaction, before: () => append(other, ref, [msg(5)]) },
        { match: isTransaction, before: () => append(other, ref, [msg(6)]) },
        {
          match: isSeal,
          before: async () => {
            done.rival = settled(rivalWrite(rival.store));
            await rival.ready;
          },
          after: async () => {
            rival.release();
            await rival.written;
          },
        },
      );
    return { script, done };
  }

  it('I4 C10: an append sent during the seal is refused and lands after the commit; the sealed round commits (3 transactions)', async () => {
    const other = makeStore();
    const ref = await newSession(other, msgs(1, 4));
    const { script, done } = sealedCommit((rival) => rival.appendItems(ref, { prepare: asIs([msg(7)]) }), other);
    const { client, sent } = script(ref);
    const store = makeStore(client);
    const out = await store.commitInPlace(ref, await begin(store, ref), commitInput([summary]));
    expect(sent.transactions).toBe(3);
    expect(out.items).toEqual([summary, msg(5), msg(6)]);
    expect(await done.rival).toMatchObject({ value: { appended: 1 } });
    expect(await other.readAll(ref)).toEqual([summary, msg(5), msg(6), msg(7)]);
  });

  it('I4 C10: a pop sent during the seal is refused and pops after the commit; the sealed round commits (3 transactions)', async () => {
    const other = makeStore();
    const ref = await newSession(other, msgs(1, 4));
    const { script, done } = sealedCommit((rival) => rival.popLast(ref), other);
    const { client, sent } = script(ref);
    const store = makeStore(client);
    const out = await store.commitInPlace(ref, await begin(store, ref), commitInput([summary]));
    expect(sent.transactions).toBe(3);
    expect(out.items).toEqual([summary, msg(5), msg(6)]);
    expect(await done.rival).toMatchObject({ value: { removed: msg(6) } });
    expect(await other.readAll(ref)).toEqual([summary, msg(5)]);
  });
});
