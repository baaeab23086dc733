// Storage layout (SPEC A7, issue 19): write and read capacity of the packed-row layout next to
// the one-row-per-item layout it replaced, measured side by side in one run on the service's own
// store (lib/runtime.ts), every request priced by the CapacityMeter from the real item images
// (DynamoDB's published rules; DynamoDB Local's own ConsumedCapacity is not reliable).
// The old layout's append is sent as the old code sent it: one TransactWriteItems of the record
// update and one `MSG#<gen>#<seq>` row per item; its tail=20 is the same store reading those rows.
import { randomUUID } from 'node:crypto';
import { DynamoDBDocumentClient, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { stackEnv, type LocalStack } from '../infra/local/stack.js';
import type { Item } from '../lib/items/types.js';
import { messageSk, metaKey, sessionPk } from '../lib/lineage/dynamo/keys.js';
import { asIs } from '../lib/lineage/prepare.js';
import type { SessionRef } from '../lib/session-ref.js';
import { startProbe, type Probe } from './capacity/probe.js';
import { encodeItems, packRows, rowItems } from '../lib/lineage/dynamo/rows.js';
import { interleave, type Comparison } from './stats.js';

/** P5: an append in a warm container (one call) vs one bare TransactWriteItems of the same rows. */
export interface AppendRow {
  items: number;
  warmCalls: number;
  coldCalls: number;
  warmVsBareTransaction: Comparison;
}

export interface ReadRow {
  read: string;
  /** DynamoDB calls of the store's read, counted. */
  calls: number;
  vsBareQuery: Comparison;
}

export interface StorageRow {
  measure: string;
  unit: 'WCU' | 'RCU';
  /** null: the old layout cannot store it at all (an item over its 400 KB row). */
  oldLayout: number | null;
  newLayout: number;
  /** DynamoDB calls the new layout made for it (the answer only). */
  newCalls: number;
}

const text = (bytes: number, tag: string): Item => {
  const frame = JSON.stringify({ role: 'user', content: tag }).length;
  return { role: 'user', content: tag + 'x'.repeat(bytes - frame) };
};

function screenshot(bytes: number): Item {
  return {
    type: 'computer_call_output',
    call_id: 'call_1',
    output: { type: 'computer_screenshot', image_url: `data:image/png;base64,${'iVBORw0KGgoAAAANSUhEUgAA'.repeat(Math.ceil(bytes / 24))}` },
  };
}

/** An empty session of the old layout's record shape (both layouts share the META). */
async function session(probe: Probe, format: 'chat' | 'responses'): Promise<SessionRef> {
  const r = await probe.core.store.createSession({ tenantId: `bench-${randomUUID().slice(0, 8)}`, format });
  if (r.replayed) throw new Error('unexpected replay');
  return { tenantId: r.session.tenantId, sessionId: r.session.sessionId };
}

/** The old layout's append transaction: the record update and one row per item. */
async function oldAppend(probe: Probe, doc: DynamoDBDocumentClient, ref: SessionRef, items: readonly Item[], from: number): Promise<void> {
  await doc.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Update: {
            TableName: probe.tableName,
            Key: metaKey(ref),
            UpdateExpression: 'SET #lastSeq = :last ADD #messageCount :n, #tokenEstimate :tok, #version :one',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: {
              '#lastSeq': 'lastSeq',
              '#messageCount': 'messageCount',
              '#tokenEstimate': 'tokenEstimate',
              '#version': 'version',
            },
            ExpressionAttributeValues: { ':last': from + items.length - 1, ':n': items.length, ':tok': items.length * 50, ':one': 1 },
          },
        },
        ...items.map((it, i) => ({
          Put: {
            TableName: probe.tableName,
            Item: { pk: sessionPk(ref), sk: messageSk(0, from + i), generation: 0, seq: from + i, body: JSON.stringify(it), tokens: 50 },
          },
        })),
      ],
    }),
  );
}

export async function benchStorage(stack: LocalStack): Promise<StorageRow[]> {
  process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
  const probe = await startProbe({ env: stackEnv(stack), endpoint: stack.dynamodbEndpoint, tableName: `storage-bench-${Date.now()}` });
  const doc = DynamoDBDocumentClient.from(probe.core.dynamo);
  const store = probe.core.store;
  const rows: StorageRow[] = [];
  try {
    const appends: [string, Item[], 'chat' | 'responses'][] = [
      ['append of 10 items of 200 B', Array.from({ length: 10 }, (_, i) => text(200, `${i}:`)), 'chat'],
      ['append of 1 item of 100 KB', [text(100_000, 'big:')], 'chat'],
      ['append of a 600 KB screenshot', [screenshot(600_000)], 'responses'],
    ];
    for (const [measure, items, format] of appends) {
      const fresh = await session(probe, format);
      const now = await probe.measure(`new: ${measure}`, () => store.appendItems(fresh, { prepare: asIs(items) }));
      const bytes = Math.max(...items.map((it) => JSON.stringify(it).length));
      let old: number | null = null;
      if (bytes < 380_000) {
        const legacy = await session(probe, format);
        old = (await probe.measure(`old: ${measure}`, () => oldAppend(probe, doc, legacy, items, 1))).answer.wcu;
      }
      rows.push({ measure, unit: 'WCU', oldLayout: old, newLayout: now.answer.wcu, newCalls: now.answer.calls });
    }

    // tail=20 of a 200-item session built of agent turns (10 items of ~200 B per append).
    const turns = Array.from({ length: 20 }, (_, t) => Array.from({ length: 10 }, (_, i) => text(200, `${t}.${i}:`)));
    const packed = await session(probe, 'chat');
    for (const turn of turns) await store.appendItems(packed, { prepare: asIs(turn) });
    const legacy = await session(probe, 'chat');
    for (const [t, turn] of turns.entries()) await oldAppend(probe, doc, legacy, turn, t * 10 + 1);
    await doc.send(
      new UpdateCommand({
        TableName: probe.tableName,
        Key: metaKey(legacy),
        UpdateExpression: 'SET version = :v',
        ExpressionAttributeValues: { ':v': 30 },
      }),
    );
    const newTail = await probe.measure('new: tail=20', () => store.readTail(packed, 20, 4_500_000));
    const oldTail = await probe.measure('old: tail=20', () => store.readTail(legacy, 20, 4_500_000));
    rows.push({
      measure: 'tail=20 of 200 items (20 appends of 10)',
      unit: 'RCU',
      oldLayout: oldTail.answer.rcu,
      newLayout: newTail.answer.rcu,
      newCalls: newTail.answer.calls,
    });
  } finally {
    await probe.close();
  }
  return rows;
}

/** P5 (issue 23): calls of a warm and a cold append, and a warm append timed against a bare transaction of the same rows. */
export async function benchAppend(stack: LocalStack, iterations: number): Promise<AppendRow[]> {
  process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
  const probe = await startProbe({ env: stackEnv(stack), endpoint: stack.dynamodbEndpoint, tableName: `append-bench-${Date.now()}` });
  const doc = DynamoDBDocumentClient.from(probe.core.dynamo);
  const store = probe.core.store;
  const out: AppendRow[] = [];
  try {
    for (const n of [1, 10]) {
      const items = Array.from({ length: n }, (_, i) => text(200, `${i}:`));
      const ref = await session(probe, 'chat');
      await store.appendItems(ref, { prepare: asIs(items) });
      const warm = await probe.measure(`warm append of ${n}`, () => store.appendItems(ref, { prepare: asIs(items) }));
      store['table'].records.drop(sessionPk(ref));
      const cold = await probe.measure(`cold append of ${n}`, () => store.appendItems(ref, { prepare: asIs(items) }));
      // The bare baseline: the record update and the same packed rows, one TransactWriteItems, no conditions.
      const bare = await session(probe, 'chat');
      const groups = packRows(
        encodeItems(
          items,
          items.map(() => 50),
        ),
      );
      let next = 1;
      const vs = await interleave(
        iterations,
        () => store.appendItems(ref, { prepare: asIs(items) }),
        async () => {
          const rows = rowItems(sessionPk(bare), 0, next, groups);
          next += n;
          await doc.send(
            new TransactWriteCommand({
              TransactItems: [
                {
                  Update: {
                    TableName: probe.tableName,
                    Key: metaKey(bare),
                    UpdateExpression: 'SET #l = :l ADD #v :one',
                    ExpressionAttributeNames: { '#l': 'lastSeq', '#v': 'version' },
                    ExpressionAttributeValues: { ':l': next - 1, ':one': 1 },
                  },
                },
                ...[...rows.heads, ...rows.parts].map((Item) => ({ Put: { TableName: probe.tableName, Item } })),
              ],
            }),
          );
        },
      );
      out.push({ items: n, warmCalls: warm.answer.calls, coldCalls: cold.answer.calls, warmVsBareTransaction: vs });
    }
  } finally {
    await probe.close();
  }
  return out;
}

/**
 * P5 (issue 23 item 4): reads timed against a bare Query of the same rows. The store's read is the
 * record (GetItem: generation, lastSeq, liveness) and then that Query: two calls, so about 2x.
 */
export async function benchReads(stack: LocalStack, iterations: number): Promise<ReadRow[]> {
  process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
  const probe = await startProbe({ env: stackEnv(stack), endpoint: stack.dynamodbEndpoint, tableName: `read-bench-${Date.now()}` });
  const doc = DynamoDBDocumentClient.from(probe.core.dynamo);
  const store = probe.core.store;
  try {
    // 200 items of 200 B in 20 appends of 10: 20 rows of 10 items.
    const ref = await session(probe, 'chat');
    for (let a = 0; a < 20; a++) {
      await store.appendItems(ref, { prepare: asIs(Array.from({ length: 10 }, (_, i) => text(200, `${a}.${i}:`))) });
    }
    const bare = (rows: number, newestFirst: boolean) => () =>
      doc.send(
        new QueryCommand({
          TableName: probe.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :msg)',
          ExpressionAttributeValues: { ':pk': sessionPk(ref), ':msg': 'MSG#' },
          ScanIndexForward: !newestFirst,
          Limit: rows,
        }),
      );
    const tail = await probe.measure('tail=20', () => store.readTail(ref, 20, 4_500_000));
    const page = await probe.measure('page of 100', () => store.readPage(ref, { limit: 100, maxBytes: 4_500_000 }));
    return [
      {
        read: 'tail=20 (2 rows)',
        calls: tail.answer.calls,
        vsBareQuery: await interleave(iterations, () => store.readTail(ref, 20, 4_500_000), bare(2, true)),
      },
      {
        read: 'page of 100 (10 rows)',
        calls: page.answer.calls,
        vsBareQuery: await interleave(iterations, () => store.readPage(ref, { limit: 100, maxBytes: 4_500_000 }), bare(10, false)),
      },
    ];
  } finally {
    await probe.close();
  }
}
