// The archive and purge tasks (P3, C11, H4, A6): an archive never brings back rows a delete and
// purge removed (issue 28 item 9), and both are paced under the partition's write budget
// (issue 35 item 6), counted in write units against an injected clock, never timed.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { WriteBudget, writeUnits, type PacingClock } from '../../../lib/lineage/dynamo/write-budget.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { Item } from '../../../lib/items/types.js';
import { begin, commitInput, dynamoClient, makeStore, msgs, newSession, rawItems } from './support.js';

const clients: DynamoDBClient[] = [];
function client(): DynamoDBClient {
  const c = dynamoClient();
  clients.push(c);
  return c;
}
afterAll(() => clients.forEach((c) => c.destroy()));

const summary: Item = { role: 'assistant', content: '[CONTEXT COMPACTION] summary' };

/** Runs `hook` once, before the first write this client sends that sets a TTL (the archive's first write). */
function beforeFirstArchiveWrite(c: DynamoDBClient, hook: () => Promise<unknown>): void {
  let fired = false;
  c.middlewareStack.add(
    (next, context) => async (args) => {
      const input = JSON.stringify((args as { input?: unknown }).input ?? {});
      const writes = context.commandName === 'UpdateItemCommand' || context.commandName === 'BatchWriteItemCommand';
      if (!fired && writes && input.includes('expiresAt')) {
        fired = true;
        await hook();
      }
      return next(args);
    },
    { step: 'initialize', name: 'before-archive-write' },
  );
}

/** A clock whose sleeps only move its own time: pacing is counted, not waited for. */
function fakeClock(): PacingClock & { slept: number } {
  let t = 1_000_000;
  const clock = {
    slept: 0,
    now: () => t,
    sleep: (ms: number) => {
      t += ms;
      clock.slept += ms;
      return Promise.resolve();
    },
  };
  return clock;
}

/** Every write this client sends under `pk`, with the clock's time and the write units of the row(s) it touches. */
function recordWrites(c: DynamoDBClient, clock: PacingClock, unitsOf: (sk: string) => number): { at: number; units: number }[] {
  const seen: { at: number; units: number }[] = [];
  c.middlewareStack.add(
    (next, context) => async (args) => {
      const input = (args as { input: Record<string, unknown> }).input;
      if (context.commandName === 'UpdateItemCommand') {
        seen.push({ at: clock.now(), units: unitsOf(String((input.Key as { sk: string }).sk)) });
      } else if (context.commandName === 'BatchWriteItemCommand') {
        const requests = Object.values(input.RequestItems as Record<string, { DeleteRequest?: { Key: { sk: string } } }[]>).flat();
        const units = requests.reduce((n, r) => n + (r.DeleteRequest ? unitsOf(r.DeleteRequest.Key.sk) : 0), 0);
        if (units > 0) seen.push({ at: clock.now(), units });
      }
      return next(args);
    },
    { step: 'initialize', name: 'record-writes' },
  );
  return seen;
}

/** The budget held: by every write's time, what was sent stays within one burst, the rate since the start, and one write. */
function expectWithinBudget(writes: { at: number; units: number }[], rate: number, burst: number): void {
  expect(writes.length).toBeGreaterThan(1);
  const start = writes[0]!.at;
  const largest = Math.max(...writes.map((w) => w.units));
  let sent = 0;
  for (const w of writes) {
    sent += w.units;
    expect(sent).toBeLessThanOrEqual(burst + (rate * (w.at - start)) / 1000 + largest);
  }
}

describe('the archive task (H4, A6, issue 28 item 9)', () => {
  it('H4/A6: an archive whose rows are deleted and purged between its read and its write stores nothing back', async () => {
    const c = client();
    const archiver = makeStore(c);
    const other = makeStore(client());
    const ref = await newSession(other, msgs(1, 6));
    const out = await other.commitInPlace(ref, await begin(other, ref), commitInput([summary]));
    // The archive has read the replaced generation's rows; then the session is deleted and purged.
    beforeFirstArchiveWrite(c, async () => {
      await other.deleteSession(ref);
      await other.runTask({ ref, kind: 'purge', generation: 0, dueAt: Date.now() });
    });
    const archived = await archiver.runTask(out.archive);
    const left = (await rawItems(c, ref)).filter((r) => String(r.sk).startsWith('MSG#'));
    expect(left).toEqual([]);
    expect(archived).toBe(0);
    expect(await other.getSession(ref)).toBeNull();
  });
});

describe('paced archive and purge (P3, issue 35 item 6)', () => {
  it('P3: archive and purge of a generation spend at most the per-partition write budget per second of the injected clock', async () => {
    const rate = 40;
    const clock = fakeClock();
    const c = client();
    const store = makeStore(c, { backgroundWriteUnitsPerSecond: rate, pacingClock: clock });
    const burst = new WriteBudget(rate).burst;
    const ref = await newSession(store, []);
    // 12 appends of one 6 KB item each: 12 rows of about 6 write units.
    for (let i = 0; i < 12; i++) await store.appendItems(ref, { prepare: asIs([{ role: 'user', content: `${i}:${'x'.repeat(6_000)}` }]) });
    const out = await store.commitInPlace(ref, await begin(store, ref), commitInput([summary]));
    const units = new Map((await rawItems(c, ref)).map((r) => [String(r.sk), writeUnits(r)]));
    const total = [...units.entries()].filter(([sk]) => sk.startsWith('MSG#')).reduce((n, [, u]) => n + u, 0);
    expect(total).toBeGreaterThan(rate * 1.5);
    const writes = recordWrites(c, clock, (sk) => units.get(sk) ?? 1);

    expect(await store.runTask(out.archive)).toBe(12);
    expectWithinBudget(writes, rate, burst);
    const archiveSleep = clock.slept;
    expect(archiveSleep).toBeGreaterThan(0);

    writes.length = 0;
    await store.deleteSession(ref);
    await store.runTask({ ref, kind: 'purge', generation: 0, dueAt: Date.now() });
    expect((await rawItems(c, ref)).filter((r) => String(r.sk).startsWith('MSG#'))).toEqual([]);
    expectWithinBudget(writes, rate, burst);
    expect(clock.slept).toBeGreaterThan(archiveSleep);
  });
});
