// Ported from openai/openai-agents-js packages/agents-core/test/memorySession.test.ts at commit
// 6d0c61a5f62a5ed8142996a25b33446c810f84b3: the applyHistoryMutations and applyHistoryTransaction
// tests (SPEC X1, issue 30), changing only how the session is constructed. Each runs against
// LineageSession over real HTTP (serverless-offline) and against the SDK's own MemorySession as
// the control: both must pass.
//
// Upstream seeds with `new MemorySession({ sessionId, initialItems })`; for LineageSession the
// items are appended to a new "responses" conversation by another client, whose id is handed in.
import { randomUUID } from 'node:crypto';
import {
  isSessionHistoryRewriteAwareSession,
  isSessionHistoryTransactionAwareSession,
  MemorySession,
  type AgentInputItem,
  type SessionHistoryRewriteAwareSession,
  type SessionHistoryTransactionArgs,
  type SessionHistoryTransactionAwareSession,
} from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LineageClient } from '../../../../lib/client/index.js';
import { LineageSession } from '../../../../lib/client/agents.js';
import { startLocalService, type LocalService } from '../../../support/local-service.js';

let service: LocalService;
let other: LineageClient;
let apiKey: string;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  apiKey = await service.createApiKey(`sdk-x1-${randomUUID().slice(0, 8)}`);
  other = new LineageClient({ baseUrl: service.baseUrl, apiKey });
}, 180_000); // the build and serverless-offline, on a busy machine

afterAll(async () => {
  await service?.stop();
});

type TxSession = SessionHistoryTransactionAwareSession & SessionHistoryRewriteAwareSession;
type Make = (opts: { sessionId: string; initialItems?: AgentInputItem[] }) => Promise<TxSession>;

const makers: [string, Make][] = [
  [
    'LineageSession over HTTP',
    async ({ initialItems }) => {
      const id = `x1-${randomUUID().slice(0, 8)}`;
      await other.putConversation(id, { format: 'responses' });
      if (initialItems?.length) await other.appendToConversation(id, initialItems);
      return new LineageSession({ client: other, sessionId: id });
    },
  ],
  ['MemorySession (control)', async (opts) => Promise.resolve(new MemorySession(opts))],
];

const createUserMessage = (text: string): AgentInputItem => ({
  role: 'user',
  content: [{ type: 'input_text', text }],
});

describe.each(makers)('X1: MemorySession history transaction tests, against %s', (_name, make) => {
  test('X1: both history capabilities are there (type guards)', async () => {
    const session = await make({ sessionId: 'session-guards' });
    expect(isSessionHistoryTransactionAwareSession(session)).toBe(true);
    expect(isSessionHistoryRewriteAwareSession(session)).toBe(true);
  });

  test('applies history mutations atomically', async () => {
    const session = await make({
      sessionId: 'session-3',
      initialItems: [
        createUserMessage('start'),
        { type: 'function_call', id: 'call-old-1', callId: 'call-1', name: 'lookup', status: 'completed', arguments: '{"ok":false}' },
        { type: 'function_call', id: 'call-old-2', callId: 'call-1', name: 'lookup', status: 'completed', arguments: '{"duplicate":true}' },
      ],
    });
    const replacement = {
      type: 'function_call',
      id: 'call-new',
      callId: 'call-1',
      name: 'lookup',
      status: 'completed',
      arguments: '{"ok":true}',
    } satisfies AgentInputItem;

    await session.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'call-1', replacement }] });

    expect(await session.getItems()).toEqual([createUserMessage('start'), replacement]);
  });

  test('X1: applies append transactions idempotently', async () => {
    const session = await make({ sessionId: 'session-transaction-append', initialItems: [createUserMessage('start')] });
    const appended = createUserMessage('committed');
    const args = { operationId: 'operation-append-1', transaction: { type: 'append_items' as const, items: [appended] } };

    await session.applyHistoryTransaction(args);
    (appended as any).content = 'mutated'; // eslint-disable-line @typescript-eslint/no-explicit-any
    await session.addItems([createUserMessage('later')]);
    await session.applyHistoryTransaction({
      operationId: args.operationId,
      transaction: { type: 'append_items', items: [createUserMessage('committed')] },
    });

    expect(await session.getItems()).toEqual([createUserMessage('start'), createUserMessage('committed'), createUserMessage('later')]);
  });

  test('X1: replaces an exact history suffix idempotently', async () => {
    const prefix = createUserMessage('start');
    const expected = createUserMessage('blocked');
    const replacement = createUserMessage('accepted');
    const session = await make({ sessionId: 'session-transaction-replace', initialItems: [prefix, expected] });
    const transaction = {
      operationId: 'operation-replace-1',
      transaction: { type: 'replace_suffix' as const, expectedSuffix: [expected], replacement: [replacement] },
    };

    await session.applyHistoryTransaction(transaction);
    await session.addItems([createUserMessage('later')]);
    await session.applyHistoryTransaction(transaction);

    expect(await session.getItems()).toEqual([prefix, replacement, createUserMessage('later')]);
  });

  test('X1: rejects a suffix mismatch without recording the operation', async () => {
    const start = createUserMessage('start');
    const session = await make({ sessionId: 'session-transaction-precondition', initialItems: [start] });

    await expect(
      session.applyHistoryTransaction({
        operationId: 'operation-replace-after-conflict',
        transaction: {
          type: 'replace_suffix',
          expectedSuffix: [createUserMessage('different')],
          replacement: [createUserMessage('accepted')],
        },
      }),
    ).rejects.toThrow('suffix no longer matches');
    expect(await session.getItems()).toEqual([start]);

    await session.applyHistoryTransaction({
      operationId: 'operation-replace-after-conflict',
      transaction: { type: 'replace_suffix', expectedSuffix: [start], replacement: [createUserMessage('accepted')] },
    });
    expect(await session.getItems()).toEqual([createUserMessage('accepted')]);
  });

  test('X1: rejects operation ID reuse with different content', async () => {
    const session = await make({ sessionId: 'session-transaction-operation-conflict' });
    await session.applyHistoryTransaction({
      operationId: 'operation-conflict',
      transaction: { type: 'append_items', items: [createUserMessage('first')] },
    });

    await expect(
      session.applyHistoryTransaction({
        operationId: 'operation-conflict',
        transaction: { type: 'append_items', items: [createUserMessage('second')] },
      }),
    ).rejects.toThrow('already applied with a different transaction');
    expect(await session.getItems()).toEqual([createUserMessage('first')]);
  });

  test('X1: records an empty append transaction', async () => {
    const session = await make({ sessionId: 'session-transaction-empty-append' });
    await session.applyHistoryTransaction({ operationId: 'operation-empty', transaction: { type: 'append_items', items: [] } });

    await expect(
      session.applyHistoryTransaction({
        operationId: 'operation-empty',
        transaction: { type: 'append_items', items: [createUserMessage('unexpected')] },
      }),
    ).rejects.toThrow('already applied with a different transaction');
    expect(await session.getItems()).toEqual([]);
  });

  test('X1: resets transaction identities when the session is cleared', async () => {
    const session = await make({ sessionId: 'session-transaction-reset' });
    const transaction = {
      operationId: 'operation-after-reset',
      transaction: { type: 'append_items' as const, items: [createUserMessage('committed')] },
    };

    await session.applyHistoryTransaction(transaction);
    await session.clearSession();
    await session.applyHistoryTransaction(transaction);

    expect(await session.getItems()).toEqual([createUserMessage('committed')]);
  });

  test('X1: rejects invalid transaction input before mutation', async () => {
    const start = createUserMessage('start');
    const session = await make({ sessionId: 'session-transaction-invalid', initialItems: [start] });

    await expect(session.applyHistoryTransaction({ operationId: '   ', transaction: { type: 'append_items', items: [] } })).rejects.toThrow(
      'operationId must be a non-empty string',
    );
    await expect(
      session.applyHistoryTransaction({ operationId: 'operation-unknown', transaction: { type: 'unknown' } as any }), // eslint-disable-line @typescript-eslint/no-explicit-any
    ).rejects.toThrow('Unsupported session history transaction type');
    await expect(
      session.applyHistoryTransaction({ operationId: 'operation-missing-transaction', transaction: null as any }), // eslint-disable-line @typescript-eslint/no-explicit-any
    ).rejects.toThrow('transaction must be an object');
    await expect(
      session.applyHistoryTransaction({ operationId: 'operation-invalid-item', transaction: { type: 'append_items', items: [42] } as any }), // eslint-disable-line @typescript-eslint/no-explicit-any
    ).rejects.toThrow('items contain invalid or unsupported data');
    expect(await session.getItems()).toEqual([start]);
  });

  test('X1: rejects unsupported transaction metadata before mutation', async () => {
    const start = createUserMessage('start');
    const session = await make({ sessionId: 'session-transaction-unsupported', initialItems: [start] });
    const withDate = createUserMessage('unsupported');
    withDate.providerData = { timestamp: new Date(0) };
    const withCycle = createUserMessage('cyclic');
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    withCycle.providerData = cycle;
    const withBigInt = createUserMessage('bigint');
    withBigInt.providerData = { value: 42n };
    const sparseItems = new Array<AgentInputItem>(1);

    const unsupportedCases: Array<[string, AgentInputItem[]]> = [
      ['operation-date', [withDate]],
      ['operation-cycle', [withCycle]],
      ['operation-bigint', [withBigInt]],
      ['operation-sparse', sparseItems],
    ];
    for (const [operationId, items] of unsupportedCases) {
      await expect(session.applyHistoryTransaction({ operationId, transaction: { type: 'append_items', items } })).rejects.toThrow(
        'items contain invalid or unsupported data',
      );
    }

    expect(await session.getItems()).toEqual([start]);
  });

  test('X1: rejects non-enumerable metadata before mutation', async () => {
    const start = createUserMessage('start');
    const session = await make({ sessionId: 'session-transaction-non-enumerable', initialItems: [start] });
    const item = createUserMessage('unsupported');
    Object.defineProperty(item, 'providerData', { enumerable: false, value: { hidden: true } });

    await expect(
      session.applyHistoryTransaction({ operationId: 'operation-non-enumerable', transaction: { type: 'append_items', items: [item] } }),
    ).rejects.toThrow('items contain invalid or unsupported data');
    expect(await session.getItems()).toEqual([start]);

    const retryItem = createUserMessage('retry');
    await session.applyHistoryTransaction({
      operationId: 'operation-non-enumerable',
      transaction: { type: 'append_items', items: [retryItem] },
    });
    expect(await session.getItems()).toEqual([start, retryItem]);
  });

  test('X1: rejects unexpected transaction fields before mutation', async () => {
    const start = createUserMessage('start');
    const session = await make({ sessionId: 'session-transaction-unexpected-fields', initialItems: [start] });

    await expect(
      session.applyHistoryTransaction({
        operationId: 'operation-unexpected-append-field',
        transaction: { type: 'append_items', items: [createUserMessage('unsupported')], metadata: { attempt: 1 } } as any, // eslint-disable-line @typescript-eslint/no-explicit-any
      }),
    ).rejects.toThrow('append transaction fields are invalid');
    await expect(
      session.applyHistoryTransaction({
        operationId: 'operation-unexpected-suffix-field',
        transaction: {
          type: 'replace_suffix',
          expectedSuffix: [start],
          replacement: [createUserMessage('unsupported')],
          metadata: { attempt: 1 },
        } as any, // eslint-disable-line @typescript-eslint/no-explicit-any
      }),
    ).rejects.toThrow('suffix transaction fields are invalid');
    expect(await session.getItems()).toEqual([start]);

    const retryItem = createUserMessage('retry');
    await session.applyHistoryTransaction({
      operationId: 'operation-unexpected-append-field',
      transaction: { type: 'append_items', items: [retryItem] },
    });
    expect(await session.getItems()).toEqual([start, retryItem]);
  });

  test('X1: does not expose transaction content in snapshot errors', async () => {
    const session = await make({ sessionId: 'session-transaction-error-redaction' });
    const item = createUserMessage('unsupported');
    item.providerData = { secret: Symbol('api-key-secret') };

    let error: unknown;
    try {
      await session.applyHistoryTransaction({
        operationId: 'operation-sensitive-invalid',
        transaction: { type: 'append_items', items: [item] },
      });
    } catch (caught) {
      error = caught;
    }

    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe('Session history transaction items contain invalid or unsupported data.');
    expect((error as Error).message).not.toContain('api-key-secret');
    expect(await session.getItems()).toEqual([]);
  });

  test('X1: copies shared-backed binary transaction data', async () => {
    const session = await make({ sessionId: 'session-transaction-shared-binary' });
    const sharedBytes = new Uint8Array(new SharedArrayBuffer(2));
    sharedBytes.set([3, 7]);
    const item = createUserMessage('binary');
    item.providerData = { bytes: sharedBytes };

    await session.applyHistoryTransaction({ operationId: 'operation-shared-binary', transaction: { type: 'append_items', items: [item] } });
    sharedBytes[0] = 9;

    const retryItem = createUserMessage('binary');
    retryItem.providerData = { bytes: new Uint8Array([3, 7]) };
    await session.applyHistoryTransaction({
      operationId: 'operation-shared-binary',
      transaction: { type: 'append_items', items: [retryItem] },
    });

    const [stored] = await session.getItems();
    expect((stored!.providerData?.bytes as Uint8Array)[0]).toBe(3);
  });

  test('X1: canonicalizes ordinary object prototypes for retries and suffixes', async () => {
    const session = await make({ sessionId: 'session-transaction-canonical-object' });
    const appended = createUserMessage('canonical');
    appended.providerData = Object.assign(Object.create(null) as object, { source: 'provider' });

    await session.applyHistoryTransaction({
      operationId: 'operation-canonical-append',
      transaction: { type: 'append_items', items: [appended] },
    });
    const [roundTripped] = await session.getItems();
    await session.applyHistoryTransaction({
      operationId: 'operation-canonical-append',
      transaction: { type: 'append_items', items: [roundTripped!] },
    });
    await session.applyHistoryTransaction({
      operationId: 'operation-canonical-replace',
      transaction: { type: 'replace_suffix', expectedSuffix: [appended], replacement: [createUserMessage('replaced')] },
    });

    expect(await session.getItems()).toEqual([createUserMessage('replaced')]);
  });

  test('X1: rejects unsupported cloned values without recording the operation', async () => {
    const typedArrayItem = createUserMessage('unsupported-typed-array');
    typedArrayItem.providerData = { values: new Uint16Array([300]) };
    const proxiedItems = new Proxy([createUserMessage('proxied')], {});
    const session = await make({ sessionId: 'session-transaction-unsupported-clones' });

    for (const items of [[typedArrayItem], proxiedItems]) {
      await expect(
        session.applyHistoryTransaction({ operationId: 'operation-rejected-clone', transaction: { type: 'append_items', items } }),
      ).rejects.toThrow('items contain invalid or unsupported data');
    }

    await session.applyHistoryTransaction({
      operationId: 'operation-rejected-clone',
      transaction: { type: 'append_items', items: [createUserMessage('accepted-after-rejections')] },
    });
    expect(await session.getItems()).toEqual([createUserMessage('accepted-after-rejections')]);
  });

  test('X1: reads the transaction envelope once and redacts accessor errors', async () => {
    const session = await make({ sessionId: 'session-transaction-envelope' });
    let operationIdReads = 0;
    const args = { transaction: { type: 'append_items' as const, items: [createUserMessage('once')] } } as SessionHistoryTransactionArgs;
    Object.defineProperty(args, 'operationId', {
      enumerable: true,
      get: () => {
        operationIdReads++;
        return operationIdReads === 1 ? 'operation-read-once' : 'changed';
      },
    });

    await session.applyHistoryTransaction(args);
    expect(operationIdReads).toBe(1);
    operationIdReads = 0;
    await session.applyHistoryTransaction(args);
    expect(operationIdReads).toBe(1);
    expect(await session.getItems()).toEqual([createUserMessage('once')]);

    const throwingArgs = {} as SessionHistoryTransactionArgs;
    Object.defineProperty(throwingArgs, 'operationId', {
      get: () => {
        throw new Error('api-key-secret');
      },
    });
    await expect(session.applyHistoryTransaction(throwingArgs)).rejects.toThrow('Session history transaction arguments are invalid.');
    try {
      await session.applyHistoryTransaction(throwingArgs);
    } catch (error) {
      expect((error as Error).message).not.toContain('api-key-secret');
    }
  });
});

describe('X1 across processes (ours: LineageSession only)', () => {
  test('X1: a transaction retried by another LineageSession on the same conversation (a resumed RunState) is a no-op', async () => {
    const id = `x1-${randomUUID().slice(0, 8)}`;
    const a = new LineageSession({ client: other, sessionId: id });
    const args = { operationId: 'op-shared', transaction: { type: 'append_items' as const, items: [createUserMessage('once')] } };
    await a.applyHistoryTransaction(args);
    await a.addItems([createUserMessage('later')]);
    // Another process: its own client and session object, the same conversation id.
    const again = new LineageSession({ client: new LineageClient({ baseUrl: service.baseUrl, apiKey }), sessionId: id });
    await again.applyHistoryTransaction(args);
    expect(await again.getItems()).toEqual([createUserMessage('once'), createUserMessage('later')]);
  });

  test('X1: Uint8Array values round-trip through addItems and getItems, stored as {"$bytes": base64}', async () => {
    const s = new LineageSession({ client: other });
    const item = { ...createUserMessage('binary'), providerData: { bytes: new Uint8Array([0, 255, 3]) } };
    await s.addItems([item]);
    const [back] = await s.getItems();
    expect(back).toEqual(item);
    expect((back as typeof item).providerData.bytes).toBeInstanceOf(Uint8Array);
    const raw = (await other.readConversation(await s.getSessionId())).items;
    expect(raw).toEqual([{ ...createUserMessage('binary'), providerData: { bytes: { $bytes: 'AP8D' } } }]);
  });

  test('X1: applyHistoryMutations answers 409 when the call is gone, and changes nothing', async () => {
    const s = new LineageSession({ client: other });
    await s.addItems([createUserMessage('start')]);
    const replacement = { type: 'function_call', callId: 'gone', name: 'lookup', arguments: '{}' } satisfies AgentInputItem;
    await expect(
      s.applyHistoryMutations({ mutations: [{ type: 'replace_function_call', callId: 'gone', replacement }] }),
    ).rejects.toMatchObject({
      status: 409,
    });
    expect(await s.getItems()).toEqual([createUserMessage('start')]);
  });
});
