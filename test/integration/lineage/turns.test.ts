// SPEC T1-T6 in the store: a conversation's turn lives on its live session's record; every grant
// is one conditional write and a write carrying a token checks it in its own transaction.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { Item } from '../../../lib/items/types.js';
import { asIs, withEstimates } from '../../../lib/lineage/prepare.js';
import type { TurnCredential, TurnGrant, TurnStrategy } from '../../../lib/lineage/types.js';
import type { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { RoundTrips } from '../../support/round-trips.js';
import { begin, commitInput, dynamoClient, makeStore, msg, msgs, newSession, rawMeta } from './support.js';

const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));
const client = () => {
  const c = dynamoClient();
  clients.push(c);
  return c;
};

const cred = (g: TurnGrant): TurnCredential => ({ turnId: g.turnId, token: g.turnToken });
const input = (strategy: TurnStrategy, extra: { ttlMs?: number; waitMs?: number } = {}) => ({
  strategy,
  ttlMs: extra.ttlMs ?? 60_000,
  waitMs: extra.waitMs ?? 0,
  conversationId: 'c',
});
const say = (store: DynamoLineageStore, ref: SessionRef, text: string, turn?: TurnCredential) =>
  store.appendItems(ref, { prepare: asIs([{ role: 'user', content: text }]), ...(turn ? { turn } : {}) });
const codeOf = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: { code?: string; message?: string }) => err.code ?? err.message,
  );
const replaceInput = (expectedSuffix: Item[], replacement: Item[], turn?: TurnCredential) => ({
  prepare: (session: Parameters<typeof withEstimates>[1]) => ({ expectedSuffix, replacement: withEstimates(replacement, session) }),
  idempotency: { key: `op-${randomUUID()}`, requestHash: 'h' },
  respond: () => ({ status: 200, body: null }),
  ...(turn ? { turn } : {}),
});
const contents = async (store: DynamoLineageStore, ref: SessionRef) =>
  (await store.readAll(ref)).map((m) => (m as { content: string }).content);

describe('turns in the store (T1-T6)', () => {
  it('T1: a begin is one conditional write; a second begin answers conversation_busy naming the active turn', async () => {
    const c = client();
    const store = makeStore(c);
    const ref = await newSession(store, []);
    const trips = new RoundTrips().watchDynamo(c);
    const { result: g, phases } = await trips.during(() => store.beginTurn(ref, input('reject')));
    trips.restore();
    expect(phases.dynamoSteps).toBe(1);
    expect(phases.dynamo.flat().map((x) => x.op)).toEqual(['UpdateItemCommand']);
    expect(g.fence).toBe(1);
    const busy = (await store.beginTurn(ref, input('reject')).then(
      () => ({}),
      (e: unknown) => e,
    )) as { code?: string; activeTurn?: unknown };
    expect(busy.code).toBe('conversation_busy');
    expect(busy.activeTurn).toEqual({ turnId: g.turnId, startedAt: g.startedAt, expiresAt: g.expiresAt });
  });

  it('T1: two begins at once give one grant', async () => {
    const store = makeStore(client());
    const other = makeStore(client());
    for (let i = 0; i < 5; i++) {
      const ref = await newSession(store, []);
      const r = await Promise.all([codeOf(store.beginTurn(ref, input('reject'))), codeOf(other.beginTurn(ref, input('reject')))]);
      expect(r.sort()).toEqual(['conversation_busy', 'ok']);
    }
  });

  it('T3/P5: a warm append with a token is one DynamoDB call, and lands only with its current turn', async () => {
    const c = client();
    const store = makeStore(c);
    const ref = await newSession(store, msgs(1, 2));
    const g = await store.beginTurn(ref, input('reject'));
    const trips = new RoundTrips().watchDynamo(c);
    const { phases } = await trips.during(() => say(store, ref, 'in turn', cred(g)));
    trips.restore();
    expect(phases.dynamoSteps).toBe(1);
    expect(await contents(store, ref)).toEqual(['message 1', 'message 2', 'in turn']);
  });

  it('T3: a wrong token is refused (turn_token_invalid) and changes nothing', async () => {
    const store = makeStore(client());
    const ref = await newSession(store, msgs(1, 2));
    const g = await store.beginTurn(ref, input('reject'));
    expect(await codeOf(say(store, ref, 'forged', { turnId: g.turnId, token: `${g.turnId}.forged` }))).toBe('turn_token_invalid');
    expect(await codeOf(store.heartbeatTurn(ref, { turnId: g.turnId, token: `${g.turnId}.forged` }, 60_000))).toBe('turn_token_invalid');
    expect(await codeOf(store.endTurn(ref, { turnId: g.turnId, token: `${g.turnId}.forged` }))).toBe('turn_token_invalid');
    expect(await store.currentTurn(ref)).toMatchObject({ turnId: g.turnId });
    expect(await contents(store, ref)).toEqual(['message 1', 'message 2']);
  });

  it("T2 interrupt: the new turn is granted at once; the old one's appends and heartbeat answer turn_superseded; what it appended stays", async () => {
    const store = makeStore(client());
    const ref = await newSession(store, []);
    const a = await store.beginTurn(ref, input('reject'));
    await say(store, ref, 'a1', cred(a));
    const b = await store.beginTurn(ref, input('interrupt'));
    expect(b.fence).toBe(a.fence + 1);
    expect(await codeOf(say(store, ref, 'a2', cred(a)))).toBe('turn_superseded');
    expect(await codeOf(store.heartbeatTurn(ref, cred(a), 60_000))).toBe('turn_superseded');
    await say(store, ref, 'b1', cred(b));
    expect(await contents(store, ref)).toEqual(['a1', 'b1']);
  });

  it("T2 interrupt racing the old turn's append: the append lands before the supersede or is refused, never after it", async () => {
    const store = makeStore(client());
    const other = makeStore(client());
    for (let i = 0; i < 8; i++) {
      const ref = await newSession(store, []);
      const a = await store.beginTurn(ref, input('reject'));
      const [appended, b] = await Promise.all([codeOf(say(store, ref, 'a', cred(a))), other.beginTurn(ref, input('interrupt'))]);
      await say(other, ref, 'b', cred(b));
      expect(await contents(store, ref)).toEqual(appended === 'ok' ? ['a', 'b'] : ['b']);
      if (appended !== 'ok') expect(appended).toBe('turn_superseded');
    }
  });

  it('T3: an append whose record read came before the supersede is refused inside its own transaction', async () => {
    // Forced interleaving: the old turn's transaction is sent only after the interrupt landed.
    const c = client();
    const store = makeStore(c);
    const ref = await newSession(store, []);
    const a = await store.beginTurn(ref, input('reject'));
    await say(store, ref, 'a1', cred(a)); // the container now knows the record (warm)
    let interrupted = false;
    c.middlewareStack.add(
      (next) => async (args) => {
        if (!interrupted && (args.input as { TransactItems?: unknown }).TransactItems) {
          interrupted = true;
          await makeStore(client()).beginTurn(ref, input('interrupt'));
        }
        return next(args);
      },
      { step: 'initialize', name: 'interruptMeanwhile' },
    );
    expect(await codeOf(say(store, ref, 'a2', cred(a)))).toBe('turn_superseded');
    expect(interrupted).toBe(true);
    expect(await contents(store, ref)).toEqual(['a1']);
  });

  it("T2 rollback: the superseded turn's items go in the same write that supersedes it", async () => {
    const store = makeStore(client());
    const ref = await newSession(store, msgs(1, 2));
    const a = await store.beginTurn(ref, input('reject'));
    await say(store, ref, 'a1', cred(a));
    await store.appendItems(ref, { prepare: asIs([msg(10), msg(11), msg(12)]), turn: cred(a) });
    const b = await store.beginTurn(ref, input('rollback'));
    expect(await contents(store, ref)).toEqual(['message 1', 'message 2']);
    expect((await store.getSession(ref))?.messageCount).toBe(2);
    expect(await codeOf(say(store, ref, 'a2', cred(a)))).toBe('turn_superseded');
    await say(store, ref, 'b1', cred(b));
    expect(await contents(store, ref)).toEqual(['message 1', 'message 2', 'b1']);
  });

  it('T2 rollback racing an append of the old turn: the append is removed with the rest or refused', async () => {
    const store = makeStore(client());
    const other = makeStore(client());
    for (let i = 0; i < 6; i++) {
      const ref = await newSession(store, msgs(1, 1));
      const a = await store.beginTurn(ref, input('reject'));
      await say(store, ref, 'a1', cred(a));
      const [appended] = await Promise.all([codeOf(say(store, ref, 'a2', cred(a))), other.beginTurn(ref, input('rollback'))]);
      expect(['ok', 'turn_superseded']).toContain(appended);
      expect(await contents(store, ref)).toEqual(['message 1']);
    }
  });

  it("T2 rollback: after a compaction summarized the turn's items it answers rollback_unavailable and changes nothing", async () => {
    const store = makeStore(client());
    const ref = await newSession(store, msgs(1, 2));
    const a = await store.beginTurn(ref, input('reject'));
    await say(store, ref, 'a1', cred(a));
    const begun = await begin(store, ref);
    await store.commitInPlace(ref, begun, commitInput([msg(100)]));
    const before = await rawMeta(client(), ref);
    expect(await codeOf(store.beginTurn(ref, input('rollback')))).toBe('rollback_unavailable');
    expect(await rawMeta(client(), ref)).toEqual(before);
    // The caller may interrupt instead.
    expect(await codeOf(store.beginTurn(ref, input('interrupt')))).toBe('ok');
  });

  it('T2 enqueue: 5 waiters are granted in arrival order as each turn ends', { timeout: 60_000 }, async () => {
    const store = makeStore(client());
    const ref = await newSession(store, []);
    const first = await store.beginTurn(ref, input('reject'));
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 5; i++) {
      const s = makeStore(client());
      waiters.push(
        s.beginTurn(ref, input('enqueue', { waitMs: 20_000 })).then(async (g) => {
          order.push(i);
          await say(s, ref, `w${i}`, cred(g));
          await s.endTurn(ref, cred(g));
        }),
      );
      // Arrival order: each joins the queue before the next is sent.
      await expect.poll(async () => ((await rawMeta(client(), ref))?.turnQueue as unknown[] | undefined)?.length ?? 0).toBe(i + 1);
    }
    // A plain begin does not jump the queue, even once the turn ended.
    await store.endTurn(ref, cred(first));
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(await contents(store, ref)).toEqual(['w0', 'w1', 'w2', 'w3', 'w4']);
  });

  it(
    'T2 enqueue: a waiter that gives up loses its place and answers conversation_busy; nobody jumps the queue',
    { timeout: 30_000 },
    async () => {
      const store = makeStore(client());
      const ref = await newSession(store, []);
      const held = await store.beginTurn(ref, input('reject'));
      const quitter = codeOf(makeStore(client()).beginTurn(ref, input('enqueue', { waitMs: 3_000 })));
      await expect.poll(async () => ((await rawMeta(client(), ref))?.turnQueue as unknown[] | undefined)?.length ?? 0).toBe(1);
      const patient = makeStore(client()).beginTurn(ref, input('enqueue', { waitMs: 15_000 }));
      expect(await quitter).toBe('conversation_busy');
      await store.endTurn(ref, cred(held));
      // The patient waiter is first now; a reject begin arriving meanwhile does not overtake it.
      const g = await patient;
      expect(await store.currentTurn(ref)).toMatchObject({ turnId: g.turnId });
    },
  );

  it('T6: under a paused agent the turn expires at expiresAt: its writes answer turn_expired and the next begin is granted', async () => {
    let clock = Date.now();
    const store = makeStore(client(), { now: () => clock });
    const ref = await newSession(store, []);
    const a = await store.beginTurn(ref, input('reject', { ttlMs: 5_000 }));
    await say(store, ref, 'a1', cred(a));
    clock += 4_000;
    expect(await codeOf(store.beginTurn(ref, input('reject')))).toBe('conversation_busy');
    clock += 2_000; // the agent paused past its expiry (no heartbeat)
    expect(await store.currentTurn(ref)).toBeNull();
    expect(await codeOf(say(store, ref, 'late', cred(a)))).toBe('turn_expired');
    expect(await codeOf(store.heartbeatTurn(ref, cred(a), 60_000))).toBe('turn_expired');
    const b = await store.beginTurn(ref, input('reject'));
    expect(await codeOf(say(store, ref, 'late again', cred(a)))).toBe('turn_expired');
    await say(store, ref, 'b1', cred(b));
    expect(await contents(store, ref)).toEqual(['a1', 'b1']);
  });

  it('T6: a heartbeat keeps a turn current past its first expiry', async () => {
    let clock = Date.now();
    const store = makeStore(client(), { now: () => clock });
    const ref = await newSession(store, []);
    const a = await store.beginTurn(ref, input('reject', { ttlMs: 5_000 }));
    clock += 4_000;
    await store.heartbeatTurn(ref, cred(a), 5_000);
    clock += 4_000;
    await say(store, ref, 'a1', cred(a));
    expect(await codeOf(store.beginTurn(ref, input('reject')))).toBe('conversation_busy');
  });

  it("T3: an ended turn's writes answer turn_ended; ending twice is fine; the next begin is granted", async () => {
    const store = makeStore(client());
    const ref = await newSession(store, msgs(1, 1));
    const a = await store.beginTurn(ref, input('reject'));
    await store.endTurn(ref, cred(a));
    await store.endTurn(ref, cred(a));
    expect(await codeOf(say(store, ref, 'after end', cred(a)))).toBe('turn_ended');
    const b = await store.beginTurn(ref, input('reject'));
    expect(await codeOf(say(store, ref, 'after end', cred(a)))).toBe('turn_ended');
    expect(await codeOf(store.popLast(ref, cred(a)))).toBe('turn_ended');
    await say(store, ref, 'b1', cred(b));
  });

  it('T5: with turns required, a write without a token answers turn_required; with a current token it lands', async () => {
    const store = makeStore(client());
    const ref = await newSession(store, msgs(1, 1));
    await store.setTurnPolicy(ref, 'required');
    expect(await codeOf(say(store, ref, 'no token'))).toBe('turn_required');
    expect(await codeOf(store.popLast(ref))).toBe('turn_required');
    const g = await store.beginTurn(ref, input('reject'));
    await say(store, ref, 'with token', cred(g));
    await store.setTurnPolicy(ref, 'optional');
    await say(store, ref, 'optional again');
    expect(await contents(store, ref)).toEqual(['message 1', 'with token', 'optional again']);
  });

  it('T3/T5/X1: a replace_suffix carries the turn check in its own transaction: superseded refused, required needs a token', async () => {
    const store = makeStore(client());
    const ref = await newSession(store, msgs(1, 2));
    const a = await store.beginTurn(ref, input('reject'));
    await store.replaceSuffix(ref, replaceInput([msg(2)], [msg(20)], cred(a)));
    await store.beginTurn(ref, input('interrupt'));
    expect(await codeOf(store.replaceSuffix(ref, replaceInput([msg(20)], [msg(21)], cred(a))))).toBe('turn_superseded');
    await store.setTurnPolicy(ref, 'required');
    expect(await codeOf(store.replaceSuffix(ref, replaceInput([msg(20)], [msg(22)])))).toBe('turn_required');
    expect(await contents(store, ref)).toEqual(['message 1', 'message 20']);
  });

  it("T2 rollback/X1: a turn's replace_suffix counts as its appends; one that replaced items from before it began cannot be rolled back", async () => {
    const store = makeStore(client());
    const ref = await newSession(store, msgs(1, 2));
    const a = await store.beginTurn(ref, input('reject'));
    await say(store, ref, 'a1', cred(a));
    await store.replaceSuffix(ref, replaceInput([{ role: 'user', content: 'a1' }], [msg(30)], cred(a)));
    await store.beginTurn(ref, input('rollback'));
    expect(await contents(store, ref)).toEqual(['message 1', 'message 2']);

    const other = await newSession(store, msgs(1, 2));
    const b = await store.beginTurn(other, input('reject'));
    await store.replaceSuffix(other, replaceInput([msg(2)], [], cred(b)));
    expect(await codeOf(store.beginTurn(other, input('rollback')))).toBe('rollback_unavailable');
    expect(await contents(store, other)).toEqual(['message 1']);
  });

  it('T4: a turn spanning a rotation keeps writing on the child; compaction and turns do not block each other', async () => {
    const store = makeStore(client());
    const ref = await newSession(store, msgs(1, 4));
    const g = await store.beginTurn(ref, input('reject'));
    const begun = await begin(store, ref); // compaction begins while the turn is held
    await say(store, ref, 'during compaction', cred(g));
    await store.heartbeatTurn(ref, cred(g), 60_000); // changes the turn state: the commit goes again with it
    const r = await store.commitRotation(ref, begun, commitInput([msg(100)]));
    const child = { tenantId: ref.tenantId, sessionId: r.child.sessionId };
    expect(await codeOf(say(store, ref, 'on parent', cred(g)))).toBe('session_ended');
    await say(store, child, 'on child', cred(g));
    expect(await store.currentTurn(child)).toMatchObject({ turnId: g.turnId, expiresAt: expect.any(String) });
    expect(await codeOf(store.beginTurn(child, input('reject')))).toBe('conversation_busy');
    expect(await contents(store, child)).toEqual(['message 100', 'during compaction', 'on child']);
    // Rolling back a turn whose items a compaction may have summarized is refused.
    expect(await codeOf(store.beginTurn(child, input('rollback')))).toBe('rollback_unavailable');
  });
  // Found by the adversarial pass: a rollback re-reads and retries while the turn it supersedes keeps
  // appending; after its rounds it refuses (nothing changed; interrupt always lands), never a 503.
  it('T2 rollback: a steadily appending turn does not starve a rollback begin into a 503 (it supersedes it or refuses)', async () => {
    const store = makeStore(client());
    const c = client();
    const rollbacker = makeStore(c);
    const ref = await newSession(store, msgs(1, 2));
    const a = await store.beginTurn(ref, input('reject'));
    await say(store, ref, 'a0', cred(a));
    // The old turn's agent appends once between each of the rollback's reads and its write: a
    // real agent streaming items does this whenever its appends are faster than a round.
    let n = 0;
    c.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'QueryCommand' && n < 40) await say(store, ref, `a${++n}`, cred(a)).catch(() => undefined);
        return next(args);
      },
      { step: 'initialize', name: 'oldTurnAppends' },
    );
    const answer = await codeOf(rollbacker.beginTurn(ref, input('rollback')));
    expect(answer).not.toBe('unavailable');
    expect(['ok', 'rollback_unavailable']).toContain(answer);
  });
});
