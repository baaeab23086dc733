// Issue 22, finding 2 and item 1 for begin: a begin that may have landed unconfirmed.
//
// Before: the begin was a plain UpdateItem. When DynamoDB stalled, the request was answered 503
// and its update landed when DynamoDB resumed; every compress then answered `skipped/locked`,
// naming the dead request, until the attempt's recorded lease ran out (up to 30 s).
// Now: a caller granted the Redis lease after the recorded holder's lease ended (a later expiry)
// takes the attempt over with a new fence (attempts.ts TAKEOVER); the replaced holder can never
// commit (L6, I1). A begin whose answer was lost is verified on the record.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { fromDomainError } from '../../../lib/api/errors.js';
import { compactSession } from '../../../lib/compaction/index.js';
import { AttemptInFlightError, FenceStaleError, StoreOutcomeUnknownError, StoreRetryableError } from '../../../lib/lineage/errors.js';
import type { BegunAttempt } from '../../../lib/lineage/types.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { sessionKey } from '../../../lib/session-ref.js';
import { contenderForSuite, depsOn, seedSession } from '../../support/compaction-fixtures.js';
import { begin, commitInput, dynamoClient, makeStore, msg, msgs, newSession, rawItems, rawMeta } from './support.js';

const c = contenderForSuite();
const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((x) => x.destroy()));

const timeout = () => Object.assign(new Error('Connection timed out after 5000 ms'), { name: 'TimeoutError' });
const isBegin = (name: string, input: { UpdateExpression?: string }) =>
  name === 'UpdateCommand' || name === 'UpdateItemCommand'
    ? (input.UpdateExpression ?? '').includes('#fenceCounter = if_not_exists')
    : false;

/**
 * A client whose first begin is answered with a timeout while the update itself is held back:
 * `land()` sends it later, as a SIGSTOPped DynamoDB applies a request it received once it resumes.
 */
function heldBegin(): { client: DynamoDBClient; land: () => Promise<void> } {
  const client = dynamoClient();
  clients.push(client);
  let held: (() => Promise<unknown>) | undefined;
  let used = false;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (!used && isBegin(context.commandName ?? '', args.input as { UpdateExpression?: string })) {
        used = true;
        held = () => next(args);
        throw timeout();
      }
      return next(args);
    },
    { step: 'initialize', name: 'heldBegin' },
  );
  return {
    client,
    land: async () => {
      if (!held) throw new Error('no begin was held');
      await held();
    },
  };
}

/** A client whose begins land and whose answers are lost; `failReads` makes the verification read fail as well. */
function lostBeginAnswers(opts: { failReads?: boolean; resend?: boolean } = {}): DynamoDBClient {
  const client = dynamoClient();
  clients.push(client);
  let lost = false;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (isBegin(context.commandName ?? '', args.input as { UpdateExpression?: string })) {
        await next(args);
        // The SDK resent it after a lost answer: the resend meets our own landed attempt.
        if (opts.resend) return next(args);
        lost = true;
        throw timeout();
      }
      if (lost && opts.failReads && (context.commandName ?? '').startsWith('Get')) throw timeout();
      return next(args);
    },
    { step: 'initialize', name: 'lostBeginAnswers' },
  );
  return client;
}

/** The attempt a dead request left on the record, as that request would hold it had it lived. */
async function recordedAttempt(ref: SessionRef): Promise<BegunAttempt> {
  const session = await c.store.getSession(ref);
  if (!session?.attempt) throw new Error('no attempt recorded');
  const raw = await rawMeta(c.ddb, ref);
  return { attempt: session.attempt, session, version: Number(raw?.version) };
}

describe('a begin that may have landed unconfirmed (issue 22, finding 2 and item 1)', () => {
  it('L6 I1 (finding 2): a compress refused 503 whose begin lands later does not block the next compress, which takes the attempt over', async () => {
    const ref = await seedSession(c.store);
    const held = heldBegin();
    const refused = await compactSession(depsOn(c, { store: makeStore(held.client) }), {
      ref,
      mode: 'rotate',
      origin: 'manual',
      holder: 'http:dead-request',
    }).catch((e: unknown) => e);
    // Verified on the record: nothing had landed when it answered, so "unavailable" is true then.
    expect(refused).toBeInstanceOf(StoreRetryableError);
    expect(fromDomainError(refused)?.code).toBe('unavailable');
    expect(await c.lease.holderOf(sessionKey(ref))).toBeNull();

    // DynamoDB resumes and applies the dead request's begin: its attempt is on the record, live for 10 s.
    await held.land();
    const dead = await recordedAttempt(ref);
    expect(dead.attempt.holder).toMatch(/^http:dead-request#/);
    expect(dead.attempt.leaseExpiresAt).toBeGreaterThan(Date.now());

    const out = await compactSession(depsOn(c), { ref, mode: 'rotate', origin: 'manual', holder: 'http:next-request' });
    expect(out).toMatchObject({ outcome: 'compressed', mode: 'rotate' });
    expect(await c.store.children(ref)).toHaveLength(1);

    // I1, L6: the dead request resumes and commits with its attempt: refused, still one child.
    await expect(c.store.commitRotation(ref, dead, commitInput([msg(1)]))).rejects.toThrow();
    expect(await c.store.children(ref)).toHaveLength(1);
  });

  for (const mode of ['rotate', 'in_place'] as const) {
    it(`I1 L6: the replaced holder is live and resumes to commit (${mode}) after the takeover: FenceStaleError; its pending child is removed; the new holder commits once`, async () => {
      const store = makeStore();
      const ref = await newSession(store, msgs(1, 6));
      // D's begin landed (its lease recorded as ending in 20 s); N was granted the lease after D's ended.
      const d = await begin(store, ref, 'D', 20_000);
      const n = await begin(store, ref, 'N', 30_000);
      expect(n.attempt.fence).toBeGreaterThan(d.attempt.fence);
      expect(n.replaced?.attemptId).toBe(d.attempt.attemptId);
      const input = commitInput([msg(100)]);
      const commitOf = (b: BegunAttempt) => (mode === 'rotate' ? store.commitRotation(ref, b, input) : store.commitInPlace(ref, b, input));
      await expect(commitOf(d)).rejects.toBeInstanceOf(FenceStaleError);
      expect(await rawItems(dynamoClient(), { tenantId: ref.tenantId, sessionId: d.attempt.pendingChildId })).toEqual([]);
      await commitOf(n);
      await expect(commitOf(d)).rejects.toThrow();
      if (mode === 'rotate') expect((await store.children(ref)).map((s) => s.sessionId)).toEqual([n.attempt.pendingChildId]);
      else expect(await store.readAll(ref)).toEqual([msg(100)]);
      expect((await store.findAllForks()).filter((f) => f.parent.tenantId === ref.tenantId)).toEqual([]);
    });
  }

  it('L6: a late begin of an earlier holder (its lease ends before the recorded one) never takes over a live successor', async () => {
    const store = makeStore();
    const ref = await newSession(store);
    const n = await begin(store, ref, 'N', 30_000);
    const late = await begin(store, ref, 'L', 20_000).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(AttemptInFlightError);
    expect((late as AttemptInFlightError).holder).toBe('N');
    expect((await store.getSession(ref))?.attempt?.attemptId).toBe(n.attempt.attemptId);
  });

  it('I2 (item 1, begin): a begin applied whose answer was lost is verified on the record and goes on with its attempt', async () => {
    const store = makeStore(lostBeginAnswers());
    const ref = await newSession(store);
    const b = await begin(store, ref, 'B');
    expect((await c.store.getSession(ref))?.attempt?.attemptId).toBe(b.attempt.attemptId);
    const out = await store.commitRotation(ref, b, commitInput([msg(1)]));
    expect((await c.store.children(ref)).map((s) => s.sessionId)).toEqual([out.child.sessionId]);
  });

  it('I2 (item 1, begin): the SDK resent a begin that had landed; the resend meets its own attempt and goes on with it', async () => {
    const store = makeStore(lostBeginAnswers({ resend: true }));
    const ref = await newSession(store);
    const b = await begin(store, ref, 'B');
    expect((await c.store.getSession(ref))?.attempt?.attemptId).toBe(b.attempt.attemptId);
    await expect(store.commitInPlace(ref, b, commitInput([msg(1)]))).resolves.toBeDefined();
  });

  it('I2 F1 (item 1, begin): a begin unconfirmed whose verification read fails too is 503 outcome_unknown, never "unavailable"', async () => {
    const store = makeStore(lostBeginAnswers({ failReads: true }));
    const ref = await newSession(c.store);
    const err = await begin(store, ref, 'B').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreOutcomeUnknownError);
    expect(fromDomainError(err)).toMatchObject({ status: 503, code: 'outcome_unknown' });
  });
});
