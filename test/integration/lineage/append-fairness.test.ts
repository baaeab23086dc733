// SPEC A4: "Without expectedCount, appends never fail for concurrency." An append that keeps
// losing version races takes the session's append priority (lib/lineage/dynamo/append-priority.ts) and lands
// on its next round. Found by the adversarial pass: an append that 45 others beat gave up (503).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { PRIORITY_AFTER_LOSSES, PRIORITY_MS } from '../../../lib/lineage/dynamo/append-priority.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { Item } from '../../../lib/items/types.js';
import { dynamoClient, makeStore, msgs, newSession, rawMeta, rawSet } from './support.js';

const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));
const client = () => {
  const c = dynamoClient();
  clients.push(c);
  return c;
};

const isAppendTx = (input: unknown) =>
  (input as { TransactItems?: { Update?: { UpdateExpression?: string } }[] }).TransactItems?.some((t) =>
    t.Update?.UpdateExpression?.startsWith('SET #lastSeq = :last ADD #messageCount'),
  ) ?? false;
/** A GetItem of a session record (the document client may not have marshalled the key yet). */
const isMetaRead = (input: unknown) => {
  const i = input as { Key?: { sk?: unknown }; UpdateExpression?: string };
  const sk = i.Key?.sk;
  return (sk === 'META' || (sk as { S?: string } | undefined)?.S === 'META') && i.UpdateExpression === undefined;
};

describe('append fairness (A4)', () => {
  it('A4: an unconditional append lands even when another append is sent before every one of its rounds', { timeout: 60_000 }, async () => {
    // The competitor's client tells when its append is waiting (a second META read: the first is
    // its opening read, later ones are polls while someone else's priority is up).
    const competitorClient = client();
    let metaReads = 0;
    let onWaiting: (() => void) | undefined;
    competitorClient.middlewareStack.add(
      (next) => async (args) => {
        if (isMetaRead(args.input) && ++metaReads >= 2) onWaiting?.();
        return next(args);
      },
      { step: 'initialize', name: 'competitorWaits' },
    );
    const competitor = makeStore(competitorClient);
    const ref = await newSession(competitor, msgs(1, 2));

    // Before each of the victim's append transactions a competitor's append goes first, and is
    // let through until it lands or waits: without the priority the victim can never win a round.
    const victimClient = client();
    const competing: Promise<unknown>[] = [];
    let victimTx = 0;
    let landed = false;
    victimClient.middlewareStack.add(
      (next) => async (args) => {
        if (isAppendTx(args.input) && !landed) {
          victimTx++;
          metaReads = 0;
          const waiting = new Promise<void>((resolve) => (onWaiting = resolve));
          const append = competitor.appendItems(ref, { prepare: asIs([{ role: 'assistant', content: `competitor ${competing.length}` }]) });
          competing.push(append);
          await Promise.race([append, waiting]);
        }
        return next(args);
      },
      { step: 'initialize', name: 'competitorFirst' },
    );
    // The victim's clock runs 5 s ahead, so the priority it takes (until its now + PRIORITY_MS) outlasts
    // any scheduling stall of a loaded machine: its next round, not the clock, ends the priority.
    const victim = makeStore(victimClient, { now: () => Date.now() + 5_000 });
    const out = await victim.appendItems(ref, { prepare: asIs([{ role: 'user', content: 'the victim' }]) });
    landed = true;
    expect(out.replayed).toBe(false);
    // It lost PRIORITY_AFTER_LOSSES rounds, took the priority, and the next round was its own.
    expect(victimTx).toBe(PRIORITY_AFTER_LOSSES + 1);
    await Promise.all(competing);
    const items: Item[] = await competitor.readAll(ref);
    expect(items.filter((i) => i.content === 'the victim')).toHaveLength(1);
    expect(items.filter((i) => typeof i.content === 'string' && i.content.startsWith('competitor'))).toHaveLength(competing.length);
    // The winning round took the priority down with it: nobody waits for a mark that is over.
    expect((await rawMeta(victimClient, ref))?.appendPriority).toBeUndefined();
  });

  it(
    'A4: an append that read the record before someone took the append priority cannot land while it is up',
    { timeout: 30_000 },
    async () => {
      const c = client();
      const ref = await newSession(makeStore(c), msgs(1, 2));
      let txs = 0;
      c.middlewareStack.add(
        (next) => async (args) => {
          // Between this append's read and its transaction, another append takes the priority.
          if (isAppendTx(args.input) && ++txs === 1)
            await rawSet(c, ref, 'appendPriority', { id: 'another-append', until: Date.now() + PRIORITY_MS });
          return next(args);
        },
        { step: 'initialize', name: 'priorityTakenMeanwhile' },
      );
      await makeStore(c).appendItems(ref, { prepare: asIs(msgs(3, 3)) });
      // The first transaction was refused by the priority; the append waited it out and landed once.
      expect(txs).toBe(2);
      expect(await makeStore(c).readAll(ref)).toEqual(msgs(1, 3));
    },
  );

  it('A4: an append priority left by an append that crashed holds others back only until it expires', { timeout: 30_000 }, async () => {
    const c = client();
    const store = makeStore(c);
    const ref = await newSession(store, msgs(1, 2));
    await rawSet(c, ref, 'appendPriority', { id: 'crashed-append', until: Date.now() - 1 });
    await store.appendItems(ref, { prepare: asIs(msgs(3, 3)) }); // an expired priority is nobody's
    await rawSet(c, ref, 'appendPriority', { id: 'crashed-append', until: Date.now() + PRIORITY_MS });
    await store.appendItems(ref, { prepare: asIs(msgs(4, 4)) }); // waits it out, then lands
    expect(await store.readAll(ref)).toEqual(msgs(1, 4));
  });

  it('A4/I4: 32 unconditional appends racing on one session from 4 clients all land, each once', { timeout: 60_000 }, async () => {
    const stores = Array.from({ length: 4 }, () => makeStore(client()));
    const ref = await newSession(stores[0]!, []);
    const all = msgs(1, 32);
    await Promise.all(all.map((m, i) => stores[i % 4]!.appendItems(ref, { prepare: asIs([m]) })));
    const items = await stores[0]!.readAll(ref);
    expect(items).toHaveLength(32);
    expect(new Set(items.map((i) => i.content)).size).toBe(32);
  });
});
