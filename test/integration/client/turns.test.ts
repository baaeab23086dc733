// Turns through the TypeScript client (issue 32, SPEC T1-T6) against the real service over HTTP:
// client.withTurn and LineageSession.runTurn, in one process and in two (the real Agents SDK
// run() in each): reject answers ConversationBusyError before the second model is called;
// interrupt supersedes the first turn, whose later writes land nowhere.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConflictError, ConversationBusyError, LineageClient } from '../../../lib/client/index.js';
import { bundleChild } from '../../support/bundle-child.js';
import { startChild, type Child } from '../../support/client/children.js';
import type { TurnChildLine } from '../../support/client/turn-child.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';

const childSource = fileURLToPath(new URL('../../support/client/turn-child.ts', import.meta.url));
const childBundle = fileURLToPath(new URL('../../../node_modules/.cache/client/turn-child.mjs', import.meta.url));

let service: LocalService;
let client: LineageClient;
let apiKey: string;

beforeAll(async () => {
  [service] = await Promise.all([startLocalService({ afterTurn: false }), bundleChild(childSource, childBundle)]);
  apiKey = await service.createApiKey(`turns-${randomUUID().slice(0, 8)}`);
  client = new LineageClient({ baseUrl: service.baseUrl, apiKey });
});
afterAll(async () => {
  await service?.stop();
});

const say = (text: string) => [{ role: 'user' as const, content: text }];
const conversation = async () => {
  const id = `turns-${randomUUID().slice(0, 8)}`;
  await client.putConversation(id, { format: 'chat' });
  return id;
};
const contents = async (id: string) => (await client.readConversation(id)).items.map((m) => (m as { content: string }).content);
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { code?: string }) => e.code ?? 'no code',
  );

describe('client turns (T1-T6)', () => {
  it('T1 T3: withTurn hands fn a client whose writes carry the token; a second withTurn is ConversationBusyError; the turn ends in finally', async () => {
    const id = await conversation();
    const busy = await client.withTurn(id, async (held, turn) => {
      await held.appendToConversation(id, say('inside the turn'));
      const err = await client.withTurn(id, async () => 'never').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConversationBusyError);
      expect((err as ConversationBusyError).body).toMatchObject({ activeTurn: { turnId: turn.turnId } });
      expect((err as ConversationBusyError).retryAfterMs).toBeGreaterThan(0);
      return err;
    });
    expect(busy).toBeInstanceOf(ConflictError);
    // Ended in finally: the next one is granted at once.
    await client.withTurn(id, async (held) => held.appendToConversation(id, say('next turn')));
    expect(await contents(id)).toEqual(['inside the turn', 'next turn']);
  });

  it("T2 T3: interrupted, the old turn's client writes nothing more (turn_superseded) and its signal aborts at its next heartbeat", async () => {
    const id = await conversation();
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const first = client.withTurn(
      id,
      async (held, turn) => {
        await held.appendToConversation(id, say('a1'));
        await hold;
        const late = await codeOf(held.appendToConversation(id, say('a2')));
        const popped = await codeOf(held.popConversation(id));
        return { late, popped, lost: turn.signal.aborted };
      },
      { ttlMs: 5000 }, // heartbeats every 2.5 s
    );
    await new Promise((r) => setTimeout(r, 500));
    await client.withTurn(id, async (held) => held.appendToConversation(id, say('b1')), { strategy: 'interrupt' });
    await new Promise((r) => setTimeout(r, 3000)); // past the old turn's next heartbeat
    release();
    expect(await first).toEqual({ late: 'turn_superseded', popped: 'turn_superseded', lost: true });
    expect(await contents(id)).toEqual(['a1', 'b1']);
  });

  it('T6 L5: heartbeats keep a 5 s turn past its TTL; an error in fn propagates and still ends the turn', async () => {
    const id = await conversation();
    const err = await client
      .withTurn(
        id,
        async (held) => {
          await new Promise((r) => setTimeout(r, 7000));
          await held.appendToConversation(id, say('after 7 s'));
          throw new Error('the agent failed');
        },
        { ttlMs: 5000 },
      )
      .catch((e: unknown) => e);
    expect((err as Error).message).toBe('the agent failed');
    expect(await contents(id)).toEqual(['after 7 s']);
    await client.withTurn(id, async () => undefined); // ended: granted at once
  });

  it(
    'T1 T2: two processes, LineageSession.runTurn around the real SDK run(): reject fails before the second model is called; interrupt supersedes the first run',
    { timeout: 120_000 },
    async () => {
      const start = (id: string, strategy: string, tag: string): Child<TurnChildLine> =>
        startChild<TurnChildLine>(childBundle, {
          LINEAGE_BASE_URL: service.baseUrl,
          LINEAGE_API_KEY: apiKey,
          CONVERSATION_ID: id,
          STRATEGY: strategy,
          TAG: tag,
        });
      // reject
      const id = `runturn-${randomUUID().slice(0, 8)}`;
      const a = start(id, 'reject', 'A1');
      await a.next('holding');
      const b = start(id, 'reject', 'B1');
      expect(await b.next('failed')).toEqual({ kind: 'failed', name: 'ConversationBusyError', code: 'conversation_busy', modelCalls: 0 });
      a.send('go');
      expect(await a.next('done')).toMatchObject({ modelCalls: 2 }); // a tool call, then the answer
      expect(await Promise.all([a.exited, b.exited])).toEqual([0, 0]);
      const first = (await client.readConversation(id)).items;
      expect(JSON.stringify(first)).toContain('[A1]');
      expect(JSON.stringify(first)).not.toContain('[B1]');

      // interrupt
      const id2 = `runturn-${randomUUID().slice(0, 8)}`;
      const c = start(id2, 'reject', 'C1');
      await c.next('holding');
      const d = start(id2, 'interrupt', 'D1');
      await d.next('holding');
      d.send('go');
      expect(await d.next('done')).toMatchObject({ modelCalls: 2 });
      c.send('go');
      expect(await c.next('failed')).toMatchObject({ code: 'turn_superseded' });
      expect(await Promise.all([c.exited, d.exited])).toEqual([0, 0]);
      const second = JSON.stringify((await client.readConversation(id2)).items);
      expect(second).toContain('[D1]');
      expect(second).not.toContain('[C1]');
    },
  );
});
