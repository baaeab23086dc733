// A warm append in one DynamoDB call (SPEC P5, issue 23): the container's record cache, the
// transaction conditioned on it, the retry from the failed condition's record, and every way a
// stale cache could misplace an item (positions, expectedCount, ended, deleted, a new in-place
// generation, pops), each tried with another container moving the session first.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { RecordCache } from '../../../lib/lineage/dynamo/record-cache.js';
import { CountMismatchError, SessionEndedError, SessionNotFoundError } from '../../../lib/lineage/errors.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import { RoundTrips } from '../../support/round-trips.js';
import { begin, commitInput, dynamoClient, makeStore, msg, msgs, newSession } from './support.js';

const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));
/** A container: its own client (counted) and store (its own record cache). */
function container() {
  const client = dynamoClient();
  clients.push(client);
  return { store: makeStore(client), trips: new RoundTrips().watchDynamo(client) };
}

const ops = async (trips: RoundTrips, run: () => Promise<unknown>) => (await trips.during(run)).calls.map((c) => c.op);

describe('P5: an append in one DynamoDB call when warm', () => {
  it('P5: a warm append is one TransactWriteItems; a cold container reads the record first', async () => {
    const a = container();
    const ref = await newSession(a.store, msgs(1, 2));
    expect(await ops(a.trips, () => a.store.appendItems(ref, { prepare: asIs([msg(3)]) }))).toEqual(['TransactWriteItemsCommand']);
    expect(await ops(a.trips, () => a.store.appendItems(ref, { prepare: asIs(msgs(4, 13)) }))).toEqual(['TransactWriteItemsCommand']);
    const cold = container();
    expect(await ops(cold.trips, () => cold.store.appendItems(ref, { prepare: asIs([msg(14)]) }))).toEqual([
      'GetItemCommand',
      'TransactWriteItemsCommand',
    ]);
    expect(await a.store.readAll(ref)).toEqual(msgs(1, 14));
  });

  it('P5/A3: a warm idempotent append is one call, and its retry replays from the failed condition (no read)', async () => {
    const a = container();
    const ref = await newSession(a.store, msgs(1, 2));
    const idempotency = { key: 'k-1', requestHash: 'h' };
    const respond = () => ({ status: 200, body: { first: true } });
    expect(await ops(a.trips, () => a.store.appendItems(ref, { prepare: asIs([msg(3)]), idempotency, respond }))).toEqual([
      'TransactWriteItemsCommand',
    ]);
    const { result, calls } = await a.trips.during(() => a.store.appendItems(ref, { prepare: asIs([msg(3)]), idempotency, respond }));
    expect(result).toEqual({ replayed: true, response: { status: 200, body: { first: true } } });
    expect(calls.map((c) => c.op)).toEqual(['TransactWriteItemsCommand']);
    expect(await a.store.readAll(ref)).toEqual(msgs(1, 3));
  });

  it('P5/A4: a stale cache never misplaces: after another container appended, the append lands after it in two transactions, no read', async () => {
    const a = container();
    const b = container();
    const ref = await newSession(a.store, msgs(1, 2));
    await b.store.appendItems(ref, { prepare: asIs(msgs(3, 5)) });
    expect(await ops(a.trips, () => a.store.appendItems(ref, { prepare: asIs([msg(6)]) }))).toEqual([
      'TransactWriteItemsCommand',
      'TransactWriteItemsCommand',
    ]);
    expect(await b.store.readAll(ref)).toEqual(msgs(1, 6));
  });

  it("P5/A4: expectedCount is judged on DynamoDB's record, not a stale cache", async () => {
    const a = container();
    const b = container();
    const ref = await newSession(a.store, msgs(1, 2));
    await b.store.appendItems(ref, { prepare: asIs([msg(3)]) });
    // The cache says 2; the session holds 3: expectedCount 3 lands, 2 is refused with the true count.
    await a.store.appendItems(ref, { prepare: asIs([msg(4)]), expectedCount: 3 });
    await b.store.appendItems(ref, { prepare: asIs([msg(5)]) });
    const err = await a.store.appendItems(ref, { prepare: asIs([msg(6)]), expectedCount: 4 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CountMismatchError);
    expect(err).toMatchObject({ messageCount: 5 });
    expect(await a.store.readAll(ref)).toEqual(msgs(1, 5));
  });

  it('P5/A3/A4: a warm keyed retry with expectedCount replays the append it retries (the moved count is its own), never 409', async () => {
    const a = container();
    const ref = await newSession(a.store, msgs(1, 2));
    const idempotency = { key: 'k-expected', requestHash: 'h' };
    const respond = () => ({ status: 200, body: { first: true } });
    await a.store.appendItems(ref, { prepare: asIs([msg(3)]), expectedCount: 2, idempotency, respond });
    // The cache now says 3; the retry still says 2: the key's record answers, not count_mismatch.
    const again = await a.store.appendItems(ref, { prepare: asIs([msg(3)]), expectedCount: 2, idempotency, respond });
    expect(again).toEqual({ replayed: true, response: { status: 200, body: { first: true } } });
    expect(await a.store.readAll(ref)).toEqual(msgs(1, 3));
  });

  it('P5/A6: after another container popped, the append takes a new position (sequence numbers never reused)', async () => {
    const a = container();
    const b = container();
    const ref = await newSession(a.store, msgs(1, 3));
    expect((await b.store.popLast(ref)).removed).toEqual(msg(3));
    await a.store.appendItems(ref, { prepare: asIs([msg(4)]) });
    expect(await a.store.readAll(ref)).toEqual([...msgs(1, 2), msg(4)]);
    expect((await a.store.getSession(ref))?.lastSeq).toBe(4);
  });

  it('P5/F1: a session another container rotated refuses the append naming the child; a deleted one is not found', async () => {
    const a = container();
    const b = container();
    const rotated = await newSession(a.store, msgs(1, 2));
    const begun = await begin(b.store, rotated);
    const out = await b.store.commitRotation(rotated, begun, commitInput([msg(9)]));
    const err = await a.store.appendItems(rotated, { prepare: asIs([msg(3)]) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SessionEndedError);
    expect(err).toMatchObject({ liveSessionId: out.child.sessionId });

    const deleted = await newSession(a.store, msgs(1, 2));
    await b.store.deleteSession(deleted);
    await expect(a.store.appendItems(deleted, { prepare: asIs([msg(3)]) })).rejects.toBeInstanceOf(SessionNotFoundError);
  });

  it('P5/K3: a container that saw a session end answers 404 once another deleted it, not 409 from its cache', async () => {
    const a = container();
    const b = container();
    const ref = await newSession(a.store, msgs(1, 2));
    // A sees the session ended (its cache now holds the ended record), then B deletes it.
    const out = await a.store.commitRotation(ref, await begin(a.store, ref), commitInput([msg(9)]));
    await expect(a.store.appendItems(ref, { prepare: asIs([msg(3)]) })).rejects.toMatchObject({ liveSessionId: out.child.sessionId });
    await b.store.deleteSession(ref);
    await expect(a.store.appendItems(ref, { prepare: asIs([msg(3)]) })).rejects.toBeInstanceOf(SessionNotFoundError);
  });

  it('P5/C11: after another container compacted in place, the append lands in the new generation after the summary', async () => {
    const a = container();
    const b = container();
    const ref = await newSession(a.store, msgs(1, 4));
    const begun = await begin(b.store, ref);
    await b.store.commitInPlace(ref, begun, commitInput([msg(100)]));
    await a.store.appendItems(ref, { prepare: asIs([msg(5)]) });
    expect(await b.store.readAll(ref)).toEqual([msg(100), msg(5)]);
  });
});

describe('the record cache is bounded (P5)', () => {
  const meta = (pk: string) => ({ pk }) as never;
  it('keeps at most its size, dropping the least recently seen, and forgets entries past their age', () => {
    let now = 0;
    const cache = new RecordCache(() => now, 2, 1_000);
    cache.set(meta('a'));
    cache.set(meta('b'));
    cache.set(meta('a'));
    cache.set(meta('c'));
    expect([cache.get('a'), cache.get('b'), cache.get('c')].map((m) => (m as { pk?: string } | undefined)?.pk)).toEqual([
      'a',
      undefined,
      'c',
    ]);
    now = 1_001;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(1);
  });
});
