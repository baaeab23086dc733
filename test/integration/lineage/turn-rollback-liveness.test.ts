// Adversarial pass (issue: rollback starvation): a rollback begin re-reads and retries while the
// turn it supersedes keeps appending; an agent that appends steadily makes every round lose its
// version condition, and after 20 rounds the begin answers 503 `unavailable` with no fault at all.
// SPEC T2 says rollback supersedes the active turn (or refuses with rollback_unavailable): after its rounds
// it refuses, nothing changed (interrupt always lands), never a 503 that retrying would not cure.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { TurnCredential, TurnGrant, TurnStrategy } from '../../../lib/lineage/types.js';
import type { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { dynamoClient, makeStore, msgs, newSession } from './support.js';

const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));
const client = () => {
  const c = dynamoClient();
  clients.push(c);
  return c;
};
const cred = (g: TurnGrant): TurnCredential => ({ turnId: g.turnId, token: g.turnToken });
const input = (strategy: TurnStrategy) => ({ strategy, ttlMs: 60_000, waitMs: 0, conversationId: 'c' });
const say = (store: DynamoLineageStore, ref: SessionRef, text: string, turn?: TurnCredential) =>
  store.appendItems(ref, { prepare: asIs([{ role: 'user', content: text }]), ...(turn ? { turn } : {}) });
const codeOf = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: { code?: string; message?: string }) => err.code ?? err.message,
  );

describe('rollback against a turn that keeps appending', () => {
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
