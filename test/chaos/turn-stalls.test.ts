// SPEC T2, T3, T6 under DynamoDB stalls (issue 32): a store paused (SIGSTOP) while a turn appends
// and another process interrupts it, and a store paused past a turn's expiry. The fence is a
// condition in each write's own transaction, so no timing makes a superseded or expired turn's
// write land after the turn that replaced it: every acknowledged append is kept once, every
// refused one is absent, and none of the old turn's items comes after the new turn's first.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTable } from '../../infra/table.js';
import { startDynamoDbLocal, type LocalProcess } from '../../infra/local/processes.js';
import { asIs } from '../../lib/lineage/prepare.js';
import type { TurnCredential, TurnGrant } from '../../lib/lineage/types.js';
import type { SessionRef } from '../../lib/session-ref.js';
import { makeCoordinator, type Coordinator, seedConversation } from '../fixtures/coordinator.js';

const TABLE = 'chaos-turn-stalls';
let ddbProc: LocalProcess;
let coord: Coordinator;

beforeAll(async () => {
  ddbProc = await startDynamoDbLocal();
  coord = await makeCoordinator({ dynamodbEndpoint: ddbProc.url, tableName: TABLE });
  await ensureTable(coord.ddb, TABLE);
});
afterAll(async () => {
  await coord?.close();
  if (ddbProc) {
    try {
      process.kill(ddbProc.pid, 'SIGCONT');
    } catch {
      // already gone
    }
    await ddbProc.stop('SIGKILL');
  }
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cred = (g: TurnGrant): TurnCredential => ({ turnId: g.turnId, token: g.turnToken });
const turnInput = (strategy: 'reject' | 'interrupt', ttlMs = 60_000) => ({ strategy, ttlMs, waitMs: 0, conversationId: 'c' });
const say = (ref: SessionRef, content: string, turn?: TurnCredential) =>
  coord.store.appendItems(ref, { prepare: asIs([{ role: 'user', content }]), ...(turn ? { turn } : {}) });
const codeOf = (err: unknown) => (err as { code?: string }).code ?? String(err);

async function pausedFor(ms: number): Promise<void> {
  process.kill(ddbProc.pid, 'SIGSTOP');
  await sleep(ms);
  process.kill(ddbProc.pid, 'SIGCONT');
}

describe('turns under DynamoDB stalls', () => {
  it("T2 T3: the store pauses while turn A appends and B interrupts: A's acknowledged appends are kept once, refused ones absent, none after B's first item", async () => {
    for (let round = 0; round < 3; round++) {
      const ref = await seedConversation(coord.store, `chaos-turns-${randomUUID()}`, [{ role: 'user', content: 'seed' }]);
      const a = cred(await coord.store.beginTurn(ref, turnInput('reject')));
      const outcomes = new Map<string, string>();
      let stop = false;
      const writer = (async () => {
        for (let i = 0; !stop && i < 200; i++) {
          const marker = `a-${i}`;
          try {
            await say(ref, marker, a);
            outcomes.set(marker, 'ok');
          } catch (err) {
            outcomes.set(marker, codeOf(err));
            if (codeOf(err) === 'turn_superseded') break;
          }
        }
      })();
      await sleep(150);
      const pause = pausedFor(1500 + round * 500);
      await sleep(300);
      const b = cred(await coord.store.beginTurn(ref, turnInput('interrupt'))); // sent during the pause, answered after it
      await pause;
      await say(ref, 'b-first', b);
      stop = true;
      await writer;
      const contents = (await coord.store.readAll(ref)).map((m) => (m as { content: string }).content);
      const bAt = contents.indexOf('b-first');
      for (const [marker, outcome] of outcomes) {
        const seen = contents.filter((c) => c === marker).length;
        if (outcome === 'ok') expect(seen, `${marker} acknowledged`).toBe(1);
        else if (outcome === 'turn_superseded') expect(seen, `${marker} refused`).toBe(0);
        else expect(seen, `${marker} ${outcome}`).toBeLessThanOrEqual(1);
        if (seen) expect(contents.indexOf(marker), `${marker} lands before B's first item`).toBeLessThan(bAt);
      }
      expect([...outcomes.values()]).toContain('turn_superseded');
    }
  });

  it("T6: the store pauses past a turn's expiry: afterwards its write answers turn_expired, nothing lands, and the next begin is granted", async () => {
    const ref = await seedConversation(coord.store, `chaos-turns-${randomUUID()}`, [{ role: 'user', content: 'seed' }]);
    const a = cred(await coord.store.beginTurn(ref, turnInput('reject', 5000)));
    await say(ref, 'a-before', a);
    const late = say(ref, 'a-late', a).then(
      () => 'ok',
      (err: unknown) => codeOf(err),
    );
    await pausedFor(6000); // the write was sent before the pause; DynamoDB decides it after the expiry
    const outcome = await late;
    const after = await say(ref, 'a-after', a).then(
      () => 'ok',
      (err: unknown) => codeOf(err),
    );
    expect(after).toBe('turn_expired');
    const b = cred(await coord.store.beginTurn(ref, turnInput('reject')));
    await say(ref, 'b-first', b);
    const contents = (await coord.store.readAll(ref)).map((m) => (m as { content: string }).content);
    expect(contents.filter((c) => c === 'a-late').length).toBe(outcome === 'ok' ? 1 : 0);
    expect(contents.slice(-1)).toEqual(['b-first']);
    expect(contents).not.toContain('a-after');
  });
});
