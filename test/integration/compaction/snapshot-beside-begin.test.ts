// The snapshot read sent beside the begin (SPEC P1, I4, A6, C10, C11, L6). A container that knows
// the session's record sends the transcript Query beside the update that issues the fence, and
// uses it only when the begin's old image is the record it read for (the same version). Here
// another container appends, pops or commits at each point of that race, forced by a hook on
// the compacting container's DynamoDB client (no sleeps): between the read and the begin, after
// both, and between the begin and the read. Every acknowledged item ends up exactly once, a
// popped item never comes back, and a commit by another holder is never overwritten.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { compactSession } from '../../../lib/compaction/index.js';
import type { CompactionMode, CompactionOutcome } from '../../../lib/compaction/types.js';
import { SUMMARY_PREFIX, type Item } from '../../../lib/items/types.js';
import { sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import {
  appendTo,
  contendersForSuite,
  deferred,
  depsOn,
  seedSession,
  testEngine,
  type Contender,
} from '../../support/compaction-fixtures.js';

const [a, b] = contendersForSuite(2) as [Contender, Contender];

/** Item i: long enough that a summary listing item numbers is always smaller than what it replaces. */
const item = (i: number): Item => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}: ${'words '.repeat(8)}` });
const items = (from: number, to: number): Item[] => Array.from({ length: to - from + 1 }, (_, k) => item(from + k));

/** The item numbers a transcript accounts for, sorted: a summary's list, or the item's own. */
function ids(transcript: readonly Item[]): number[] {
  return transcript
    .flatMap((it) => {
      const text = typeof it.content === 'string' ? it.content : '';
      if (text.startsWith(SUMMARY_PREFIX)) return text.slice(SUMMARY_PREFIX.length).split(',').filter(Boolean).map(Number);
      return [Number(/^message (\d+):/.exec(text)![1])];
    })
    .sort((x, y) => x - y);
}
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => from + k);

/** A summary naming the items it replaces, then the last two kept as they are (a user turn among them, C8). */
const summarise = (input: readonly Item[]): Item[] => [
  { role: 'assistant', content: SUMMARY_PREFIX + ids(input.slice(0, -2)).join(',') },
  ...input.slice(-2),
];

type Moment = 'read, then X, then begin' | 'read, begin, then X' | 'begin, then X, then read';

/**
 * Runs `interfere` once, at `moment` of the next attempt on `client` for `ref`, by holding the begin
 * (the UpdateItem that records the attempt) or the snapshot Query until the other has answered.
 */
function interleave(client: DynamoDBClient, ref: SessionRef, moment: Moment, interfere: () => Promise<unknown>) {
  const pk = sessionPk(ref);
  const name = `interleave-${Math.random().toString(36).slice(2)}`;
  const readAnswered = deferred();
  const beginAnswered = deferred();
  const state = { ran: false, read: false, begin: false };
  const pkOf = (v: unknown) => (typeof v === 'object' && v !== null && 'S' in v ? (v as { S: string }).S : v);
  const run = async () => {
    await interfere();
    state.ran = true;
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as {
        Key?: { pk?: unknown };
        UpdateExpression?: string;
        ExpressionAttributeValues?: Record<string, unknown>;
      };
      // Only the attempt's first begin and first read (a read redone after the begin goes straight through).
      const isBegin =
        !state.begin &&
        context.commandName === 'UpdateItemCommand' &&
        pkOf(input.Key?.pk) === pk &&
        !!input.UpdateExpression?.includes('#attempt = :attempt');
      const isRead = !state.read && context.commandName === 'QueryCommand' && pkOf(input.ExpressionAttributeValues?.[':pk']) === pk;
      if (isRead) {
        state.read = true;
        if (moment === 'begin, then X, then read') {
          await beginAnswered.promise;
          await run();
          return next(args);
        }
        const out = await next(args);
        readAnswered.resolve();
        return out;
      }
      if (!isBegin) return next(args);
      state.begin = true;
      if (moment === 'read, then X, then begin') {
        await readAnswered.promise;
        await run();
        return next(args);
      }
      if (moment === 'read, begin, then X') await readAnswered.promise;
      const out = await next(args);
      if (moment === 'read, begin, then X') await run();
      beginAnswered.resolve();
      return out;
    },
    { step: 'initialize', name },
  );
  return { state, remove: () => client.middlewareStack.remove(name) };
}

/** One attempt on `a` (which knows the record: it wrote it) with `interfere` run by `b` at `moment`. */
async function attempt(ref: SessionRef, mode: CompactionMode, moment: Moment, interfere: () => Promise<unknown>) {
  const engine = testEngine((input) => ({ items: summarise(input) }));
  const gate = interleave(a.ddb, ref, moment, interfere);
  try {
    const out = await compactSession(depsOn(a, { engine }), { ref, mode, origin: 'turn', holder: `a-${moment}` });
    expect(gate.state.ran).toBe(true);
    return { out, engineInput: engine.calls[0]?.items };
  } finally {
    gate.remove();
  }
}

/** The live transcript after the attempt: the child's after a rotation, else the session's. */
async function live(ref: SessionRef, out: CompactionOutcome): Promise<Item[]> {
  return b.store.readAll({ tenantId: ref.tenantId, sessionId: out.sessionId });
}

/** Another holder's whole in-place compaction, on the store (a holder paused past its lease, L6): begin, an append in its tail, commit. */
async function otherHolderCommits(ref: SessionRef): Promise<void> {
  const begun = await b.store.beginAttempt(ref, {
    holder: 'other',
    leaseExpiresAt: Date.now() + 60_000,
    activityLabel: 'compaction started',
  });
  await appendTo(b.store, ref, [item(11)]);
  const compacted = summarise(await b.store.readSnapshot(ref, begun));
  await b.store.commitInPlace(ref, begun, {
    compacted,
    tokenEstimates: compacted.map(() => 5),
    activityLabel: 'compaction completed',
  });
}

describe('P1: the snapshot read beside the begin', () => {
  it.each<CompactionMode>(['rotate', 'in_place'])(
    'P1/I4: an append landing between the snapshot read and the begin (%s): the begin shows a moved version, the read is redone, the item is compacted exactly once',
    async (mode) => {
      const ref = await seedSession(a.store, items(1, 10));
      const { out, engineInput } = await attempt(ref, mode, 'read, then X, then begin', () => appendTo(b.store, ref, [item(11)]));
      expect(out.outcome).toBe('compressed');
      expect(ids(engineInput!)).toEqual(range(1, 11));
      expect(ids(await live(ref, out))).toEqual(range(1, 11));
    },
  );

  it('P1/A6: a pop between the snapshot read and the begin: the read is redone, the popped item never comes back', async () => {
    const ref = await seedSession(a.store, items(1, 10));
    const { out, engineInput } = await attempt(ref, 'in_place', 'read, then X, then begin', () => b.store.popLast(ref));
    expect(out.outcome).toBe('compressed');
    expect(ids(engineInput!)).toEqual(range(1, 9));
    expect(ids(await live(ref, out))).toEqual(range(1, 9));
  });

  it("P1/C11: another holder's in-place commit between the snapshot read and the begin: the attempt compacts that commit's generation, nothing lost or doubled", async () => {
    const ref = await seedSession(a.store, items(1, 10));
    const { out, engineInput } = await attempt(ref, 'in_place', 'read, then X, then begin', () => otherHolderCommits(ref));
    expect(out.outcome).toBe('compressed');
    // The other holder's transcript (its summary, 9, 10 and the appended 11) is what this attempt compacted.
    expect(engineInput![0]!.content).toBe(`${SUMMARY_PREFIX}${range(1, 8).join(',')}`);
    expect(ids(engineInput!)).toEqual(range(1, 11));
    expect(ids(await live(ref, out))).toEqual(range(1, 11));
  });

  it.each<Moment>(['read, begin, then X', 'begin, then X, then read'])(
    'P1/I4: an append after the begin (%s) is past the watermark: carried once as the tail',
    async (moment) => {
      const ref = await seedSession(a.store, items(1, 10));
      const { out, engineInput } = await attempt(ref, 'rotate', moment, () => appendTo(b.store, ref, [item(11)]));
      expect(out.outcome).toBe('compressed');
      expect(ids(engineInput!)).toEqual(range(1, 10));
      expect(ids(await live(ref, out))).toEqual(range(1, 11));
    },
  );

  it.each<Moment>(['read, begin, then X', 'begin, then X, then read'])(
    'P1/A6: a pop after the begin (%s) makes the attempt stale: it does not commit, the popped item stays gone',
    async (moment) => {
      const ref = await seedSession(a.store, items(1, 10));
      const { out } = await attempt(ref, 'in_place', moment, () => b.store.popLast(ref));
      expect(out).toMatchObject({ outcome: 'skipped', reason: 'stale' });
      expect(await b.store.readAll(ref)).toEqual(items(1, 9));
    },
  );

  it.each<Moment>(['read, begin, then X', 'begin, then X, then read'])(
    "P1/L6: another holder's begin and commit after the begin (%s) move the fence: this attempt does not commit, the other's transcript stands",
    async (moment) => {
      const ref = await seedSession(a.store, items(1, 10));
      const { out } = await attempt(ref, 'in_place', moment, () => otherHolderCommits(ref));
      expect(out).toMatchObject({ outcome: 'skipped', reason: 'lease_lost' });
      const transcript = await b.store.readAll(ref);
      expect(transcript[0]!.content).toBe(`${SUMMARY_PREFIX}${range(1, 8).join(',')}`);
      expect(ids(transcript)).toEqual(range(1, 11));
    },
  );
});
