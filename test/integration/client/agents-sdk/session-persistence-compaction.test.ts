// SPEC X1/X2 (issue 30): the Agents SDK runner's own session-persistence tests for compaction
// replacement and blocked outputs, against LineageSession over real HTTP (serverless-offline,
// DynamoDB Local, Redis) and against MemorySession as the control. Ours: compaction-replacement.test.ts.
//
// The ports: "replaces the full legacy session prefix and remains idempotent", "uses a session
// compaction replacement capability without clearing identity", "does not reappend an accepted
// compaction replacement on retry" and the blocked-output case "retries a blocked-output
// transaction without duplicating committed tool effects" (X1) from
// openai/openai-agents-js packages/agents-core/test/runner/sessionPersistence.test.ts at commit
// 6d0c61a5f62a5ed8142996a25b33446c810f84b3 (the newest there is 0.17.1: the repository holds no
// 0.20 tests, so the memorySession replaceHistoryWithCompaction tests the issue names do not
// exist to port; MemorySession 0.20 has no replaceHistoryWithCompaction). It drives the runner's
// saveToSession, which @openai/agents-core does not export, from its dist file. Only the session's
// construction changes: seeded by another client instead of `session.items = [...]`. Against
// MemorySession (the control) the runner clears and re-adds; against LineageSession it calls
// replaceHistoryWithCompaction, as a held attempt.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  Agent,
  MemorySession,
  RunCompactionItem,
  RunMessageOutputItem,
  RunReasoningItem,
  RunToolCallOutputItem,
  RunContext,
  RunResult,
  RunState,
  RunToolCallItem,
  type AgentInputItem,
  type Session,
  type SessionHistoryTransactionArgs,
} from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LineageClient } from '../../../../lib/client/index.js';
import { LineageSession } from '../../../../lib/client/agents.js';
import { startLocalService, type LocalService } from '../../../support/local-service.js';

let service: LocalService;
let other: LineageClient;
let apiKey: string;
type SaveToSession = (session: Session, input: AgentInputItem[], result: unknown, options?: { runCompaction?: boolean }) => Promise<void>;
let saveToSession: SaveToSession;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  apiKey = await service.createApiKey(`sdk-x2-${randomUUID().slice(0, 8)}`);
  other = new LineageClient({ baseUrl: service.baseUrl, apiKey });
  // The runner's own module, the one its index loads (so RunState is the same class).
  const dist = dirname(createRequire(import.meta.url).resolve('@openai/agents-core'));
  ({ saveToSession } = (await import(pathToFileURL(join(dist, 'runner/sessionPersistence.mjs')).href)) as { saveToSession: SaveToSession });
}, 180_000);

afterAll(async () => {
  await service?.stop();
});

const TEST_AGENT = new Agent({ name: 'TestAgent' });
const message = (text: string): AgentInputItem => ({
  type: 'message',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text }],
});
const functionCall = (callId: string): AgentInputItem => ({
  type: 'function_call',
  callId,
  name: 'lookup',
  arguments: '{}',
  status: 'completed',
});
const compactionItem = (id: string): AgentInputItem => ({ type: 'compaction', id, encrypted_content: 'ciphertext' });

/** A new conversation holding `items`, appended by another client. */
async function seeded(items: AgentInputItem[], client = other): Promise<{ id: string; session: LineageSession }> {
  const id = `x2-${randomUUID().slice(0, 8)}`;
  await other.putConversation(id, { format: 'responses' });
  if (items.length) await other.appendToConversation(id, items);
  return { id, session: new LineageSession({ client, sessionId: id }) };
}

const makers: [string, (items: AgentInputItem[]) => Promise<Session & { read(): Promise<AgentInputItem[]> }>][] = [
  [
    'LineageSession over HTTP',
    async (items) => {
      const { session } = await seeded(items);
      return Object.assign(session, { read: () => session.getItems() });
    },
  ],
  [
    'MemorySession (control)',
    (items) => {
      const session = new MemorySession();
      // Upstream's `session.items = [...]` (a private field to TypeScript).
      const held = session as unknown as { items: AgentInputItem[] };
      held.items = structuredClone(items);
      return Promise.resolve(Object.assign(session, { read: () => Promise.resolve(held.items) }));
    },
  ],
];

describe.each(makers)('X2: sessionPersistence legacy compaction reconciliation, against %s', (_name, make) => {
  test('X2: replaces the full legacy session prefix and remains idempotent', async () => {
    const oldHistory = message('old history');
    const call = functionCall('call_legacy_prefix_reconciliation');
    const compaction = compactionItem('cmp_legacy_prefix_reconciliation');
    const state = new RunState(new RunContext(), 'input', TEST_AGENT, 1);
    const internal = state as unknown as Record<string, unknown>;
    internal._generatedItems = [new RunCompactionItem(compaction as never, TEST_AGENT), new RunToolCallItem(call as never, TEST_AGENT)];
    internal._pendingLegacyCompactionSessionItems = [compaction, call];
    internal._currentTurnPersistedItemCount = 2;
    const session = await make([oldHistory, call]);

    await saveToSession(session, [], new RunResult(state as never), { runCompaction: false });
    expect(await session.read()).toEqual([compaction, call]);
    expect(internal._pendingLegacyCompactionSessionItems).toBeUndefined();

    internal._pendingLegacyCompactionSessionItems = [compaction, call];
    await saveToSession(session, [], new RunResult(state as never), { runCompaction: false });
    expect(await session.read()).toEqual([compaction, call]);
    expect(internal._pendingLegacyCompactionSessionItems).toBeUndefined();
  });
});

/**
 * Upstream's sessions for these two tests subclass MemorySession to count calls or to throw after
 * an accepted replacement; the ports subclass LineageSession the same way (the control keeps
 * upstream's MemorySession subclass).
 */
function lineageCounting(id: string) {
  return new (class extends LineageSession {
    clearCount = 0;
    replacementCount = 0;
    throwAfterReplacement = false;
    override async replaceHistoryWithCompaction(items: AgentInputItem[]): Promise<void> {
      this.replacementCount += 1;
      await super.replaceHistoryWithCompaction(items);
      if (this.throwAfterReplacement) throw new Error('write outcome unknown');
    }
    override async clearSession(): Promise<void> {
      this.clearCount += 1;
      await super.clearSession();
    }
  })({ client: other, sessionId: id });
}

function compactionState(compaction: AgentInputItem, retained: AgentInputItem) {
  const state = new RunState(new RunContext(), 'input', TEST_AGENT, 1);
  (state as unknown as Record<string, unknown>)._generatedItems = [
    new RunCompactionItem(compaction as never, TEST_AGENT),
    new RunMessageOutputItem(retained as never, TEST_AGENT),
  ];
  return state;
}

describe('X2: sessionPersistence compaction replacement, ported', () => {
  test('X2: uses a session compaction replacement capability without clearing identity (LineageSession: applied in place)', async () => {
    const previousItem = message('previous history');
    const compaction = compactionItem('cmp_identity_preserving_session');
    const retainedItem = message('retained history');
    const { id } = await seeded([previousItem]);
    const session = lineageCounting(id);
    await saveToSession(session, [], new RunResult(compactionState(compaction, retainedItem) as never), { runCompaction: false });
    expect(session.replacementCount).toBe(1);
    expect(session.clearCount).toBe(0);
    // Upstream's stub only records the replacement; ours applies it, keeping the id.
    expect(await session.getItems()).toEqual([compaction, retainedItem]);
    expect(await session.getSessionId()).toBe(id);
  });

  test('X2: uses a session compaction replacement capability without clearing identity (MemorySession control)', async () => {
    const previousItem = message('previous history');
    const compaction = compactionItem('cmp_identity_preserving_session');
    const retainedItem = message('retained history');
    class IdentityPreservingSession extends MemorySession {
      clearCount = 0;
      replacementItems: AgentInputItem[] | undefined;
      replaceHistoryWithCompaction(items: AgentInputItem[]): Promise<void> {
        this.replacementItems = structuredClone(items);
        return Promise.resolve();
      }
      override async clearSession(): Promise<void> {
        this.clearCount += 1;
        await super.clearSession();
      }
    }
    const session = new IdentityPreservingSession();
    (session as unknown as { items: AgentInputItem[] }).items = [previousItem];
    await saveToSession(session, [], new RunResult(compactionState(compaction, retainedItem) as never), { runCompaction: false });
    expect(session.replacementItems).toEqual([compaction, retainedItem]);
    expect(session.clearCount).toBe(0);
    expect(await session.getItems()).toEqual([previousItem]);
  });

  test('X2: does not reappend an accepted compaction replacement on retry (LineageSession)', async () => {
    const compaction = compactionItem('cmp_accepted_then_throw');
    const retainedItem = message('retained history');
    const { id } = await seeded([message('old history')]);
    const session = lineageCounting(id);
    session.throwAfterReplacement = true;
    const state = compactionState(compaction, retainedItem);
    const result = new RunResult(state as never);
    await expect(saveToSession(session, [], result, { runCompaction: false })).rejects.toThrow('write outcome unknown');
    await expect(saveToSession(session, [], result, { runCompaction: false })).resolves.toBeUndefined();
    expect(session.replacementCount).toBe(1);
    expect((await session.getItems()).filter((item) => item.type === 'compaction')).toEqual([compaction]);
    expect((state as unknown as Record<string, unknown>)._currentTurnPersistedItemCount).toBe(2);
  });

  test('X2: does not reappend an accepted compaction replacement on retry (MemorySession control)', async () => {
    const compaction = compactionItem('cmp_accepted_then_throw');
    const retainedItem = message('retained history');
    class AcceptedThenThrowSession extends MemorySession {
      replacementCount = 0;
      async replaceHistoryWithCompaction(items: AgentInputItem[]): Promise<void> {
        this.replacementCount += 1;
        (this as unknown as { items: AgentInputItem[] }).items.push(...structuredClone(items));
        return Promise.reject(new Error('write outcome unknown'));
      }
    }
    const session = new AcceptedThenThrowSession();
    (session as unknown as { items: AgentInputItem[] }).items = [message('old history')];
    const state = compactionState(compaction, retainedItem);
    const result = new RunResult(state as never);
    await expect(saveToSession(session, [], result, { runCompaction: false })).rejects.toThrow('write outcome unknown');
    await expect(saveToSession(session, [], result, { runCompaction: false })).resolves.toBeUndefined();
    expect(session.replacementCount).toBe(1);
    expect((await session.getItems()).filter((item) => item.type === 'compaction')).toEqual([compaction]);
    expect((state as unknown as Record<string, unknown>)._currentTurnPersistedItemCount).toBe(2);
  });
});

type Tx = SessionHistoryTransactionArgs;

/** Upstream's AcceptedBlockedThenThrowSession (a MemorySession subclass): records each transaction, throws once after the first committed. */
interface Recording extends Session {
  operationIds: string[];
  transactions: Tx['transaction'][];
  preserveReasoningIds: boolean;
}
function record(self: Recording & { throwAfterFirstCommit: boolean }, args: Tx, apply: () => Promise<void>): Promise<void> {
  self.operationIds.push(args.operationId);
  self.transactions.push(structuredClone(args.transaction));
  return apply().then(() => {
    if (self.throwAfterFirstCommit) {
      self.throwAfterFirstCommit = false;
      throw new Error('write outcome unknown');
    }
  });
}
class AcceptedBlockedThenThrowLineage extends LineageSession implements Recording {
  operationIds: string[] = [];
  transactions: Tx['transaction'][] = [];
  preserveReasoningIds = false;
  throwAfterFirstCommit = true;
  preserveReasoningItemIdsForPersistence(): boolean {
    return this.preserveReasoningIds;
  }
  override applyHistoryTransaction(args: Tx): Promise<void> {
    return record(this, args, () => super.applyHistoryTransaction(args));
  }
}
class AcceptedBlockedThenThrowMemory extends MemorySession implements Recording {
  operationIds: string[] = [];
  transactions: Tx['transaction'][] = [];
  preserveReasoningIds = false;
  throwAfterFirstCommit = true;
  preserveReasoningItemIdsForPersistence(): boolean {
    return this.preserveReasoningIds;
  }
  override applyHistoryTransaction(args: Tx): Promise<void> {
    return record(this, args, () => super.applyHistoryTransaction(args));
  }
}

const blockedMakers: [string, () => Promise<{ session: Recording; different: Session }>][] = [
  [
    'LineageSession over HTTP',
    async () => {
      const [{ id }, { id: otherId }] = await Promise.all([seeded([]), seeded([])]);
      return {
        session: new AcceptedBlockedThenThrowLineage({ client: other, sessionId: id }),
        different: new LineageSession({ client: other, sessionId: otherId }),
      };
    },
  ],
  [
    'MemorySession (control)',
    () =>
      Promise.resolve({ session: new AcceptedBlockedThenThrowMemory(), different: new MemorySession({ sessionId: 'different-session' }) }),
  ],
];

describe.each(blockedMakers)('X1: sessionPersistence blocked-output transaction, against %s', (_name, make) => {
  test('X1: retries a blocked-output transaction without duplicating committed tool effects', async () => {
    const call = { ...(functionCall('call-blocked-retry') as object), name: 'test', providerData: undefined } as AgentInputItem & {
      callId: string;
      name: string;
    };
    delete (call as { status?: unknown }).status;
    const callItem = new RunToolCallItem(call as never, TEST_AGENT);
    const resultItem = new RunToolCallOutputItem(
      { type: 'function_call_result', callId: call.callId, name: call.name, status: 'completed', output: 'committed' } as never,
      TEST_AGENT,
      'committed',
      undefined,
      'executed',
    );
    const { session, different } = await make();
    const state = new RunState(new RunContext(), 'input', TEST_AGENT, 1);
    const internal = state as unknown as Record<string, unknown>;
    state.setReasoningItemIdPolicy('omit');
    internal._generatedItems = [
      new RunReasoningItem(
        { type: 'reasoning', id: 'reasoning-blocked-retry', content: [{ type: 'input_text', text: 'run the committed tool' }] },
        TEST_AGENT,
      ),
      callItem,
      resultItem,
    ];
    const result = new RunResult(state as never);
    const input = message('blocked transaction input');
    internal._currentTurnSessionHistoryTransactionInputItems = [input];

    await expect(saveToSession(session, [input], result, { outputBlocked: true } as never)).rejects.toThrow('write outcome unknown');
    expect(internal._currentTurnPersistedItemCount).toBe(0);
    expect(internal._pendingSessionHistoryTransaction).toBeDefined();
    expect((session.transactions[0] as { items: AgentInputItem[] }).items.find((item) => item.type === 'function_call')).not.toHaveProperty(
      'providerData',
    );
    session.preserveReasoningIds = true;

    await expect(saveToSession(different, [], new RunResult(state as never), { outputBlocked: true } as never)).rejects.toThrow(
      'Output guardrail session persistence belongs to a different session',
    );
    expect(await different.getItems()).toEqual([]);
    expect(internal._pendingSessionHistoryTransaction).toBeDefined();

    await expect(saveToSession(session, [], new RunResult(state as never), { outputBlocked: true } as never)).resolves.toBeUndefined();
    expect(session.operationIds).toHaveLength(2);
    expect(session.operationIds[1]).toBe(session.operationIds[0]);
    expect(await session.getItems()).toEqual(
      JSON.parse(
        JSON.stringify([
          input,
          { type: 'reasoning', content: [{ type: 'input_text', text: 'run the committed tool' }] },
          call,
          resultItem.rawItem,
        ]),
      ),
    );
    expect(internal._currentTurnPersistedItemCount).toBe(3);
    expect(internal._pendingSessionHistoryTransaction).toBeUndefined();
  });
});
