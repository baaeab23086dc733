// Shared setup for lineage-store integration tests against DynamoDB Local (global setup).
import { randomUUID } from 'node:crypto';
import { GetCommand, QueryCommand, DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../../lib/aws-clients.js';
import type { Item, ItemFormat } from '../../../lib/items/types.js';
import { DynamoLineageStore, type DynamoLineageStoreOptions } from '../../../lib/lineage/dynamo/store.js';
import { sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { BegunAttempt, CommitInput, StoreTask } from '../../../lib/lineage/types.js';
import type { SessionRef } from '../../../lib/session-ref.js';

export const tableName = (): string => {
  const t = process.env.TABLE_NAME;
  if (!t) throw new Error('TABLE_NAME not set: run through test/vitest.config.ts');
  return t;
};

export function dynamoClient(): DynamoDBClient {
  return createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT });
}

export function makeStore(
  client: DynamoDBClient = dynamoClient(),
  opts: Partial<Omit<DynamoLineageStoreOptions, 'client'>> = {},
): DynamoLineageStore {
  return new DynamoLineageStore({ client, tableName: tableName(), ...opts });
}

export function msg(i: number, role: 'user' | 'assistant' = i % 2 ? 'assistant' : 'user'): Item {
  return { role, content: `message ${i}` };
}

export function msgs(from: number, to: number): Item[] {
  return Array.from({ length: to - from + 1 }, (_, k) => msg(from + k));
}

export async function newSession(store: DynamoLineageStore, items: Item[] = msgs(1, 6), format: ItemFormat = 'chat'): Promise<SessionRef> {
  const r = await store.createSession({ tenantId: `t-${randomUUID()}`, format });
  if (r.replayed) throw new Error('unexpected replay');
  const ref = { tenantId: r.session.tenantId, sessionId: r.session.sessionId };
  if (items.length) await append(store, ref, items);
  return ref;
}

/** Appends in transactions of at most 98 items (one request's worth each). */
export async function append(store: DynamoLineageStore, ref: SessionRef, items: readonly Item[]): Promise<void> {
  for (let i = 0; i < items.length; i += 98) await store.appendItems(ref, { prepare: asIs(items.slice(i, i + 98)) });
}

/** Begins an attempt the way compaction does. `leaseMs` <= 0 records a lease already expired (a paused holder). */
export function begin(store: DynamoLineageStore, ref: SessionRef, holder = `h-${randomUUID()}`, leaseMs = 30_000): Promise<BegunAttempt> {
  return store.beginAttempt(ref, { holder, leaseExpiresAt: Date.now() + leaseMs, activityLabel: 'compaction started' });
}

export function commitInput(items: readonly Item[]): CommitInput {
  return { compacted: items, tokenEstimates: items.map(() => 5), activityLabel: 'compaction completed' };
}

export const doc = (client: DynamoDBClient) => DynamoDBDocumentClient.from(client);

/** Raw items under a session's pk (bypassing the store), e.g. to prove nothing was left behind. */
export async function rawItems(client: DynamoDBClient, ref: SessionRef): Promise<Record<string, unknown>[]> {
  const out = await doc(client).send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': sessionPk(ref) },
      ConsistentRead: true,
    }),
  );
  return out.Items ?? [];
}

/**
 * The items stored under a session, one entry per item (packed rows expanded; parts left out),
 * with the generation and sequence number their row's key gives them and the row's TTL.
 */
export async function storedItems(
  client: DynamoDBClient,
  ref: SessionRef,
): Promise<{ sk: string; generation: number; seq: number; expiresAt?: number }[]> {
  const out: { sk: string; generation: number; seq: number; expiresAt?: number }[] = [];
  for (const row of await rawItems(client, ref)) {
    const m = /^MSG#(\d{10})#(\d{10})$/.exec(String(row.sk));
    if (!m) continue;
    const count = typeof row.body === 'string' ? 1 : String(row.idx).split(',').length;
    const first = typeof row.body === 'string' ? Number(m[2]) : Number(row.first);
    for (let i = 0; i < count; i++) {
      out.push({
        sk: String(row.sk),
        generation: Number(m[1]),
        seq: first + i,
        ...(row.expiresAt !== undefined ? { expiresAt: Number(row.expiresAt) } : {}),
      });
    }
  }
  return out;
}

export async function rawMeta(client: DynamoDBClient, ref: SessionRef): Promise<Record<string, unknown> | undefined> {
  const out = await doc(client).send(
    new GetCommand({ TableName: tableName(), Key: { pk: sessionPk(ref), sk: 'META' }, ConsistentRead: true }),
  );
  return out.Item;
}

/** Writes a META item the way older code did (no fence counter, no version...). */
export async function putRawMeta(client: DynamoDBClient, ref: SessionRef, fields: Record<string, unknown>): Promise<void> {
  await doc(client).send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        pk: sessionPk(ref),
        sk: 'META',
        tenantId: ref.tenantId,
        sessionId: ref.sessionId,
        createdAt: new Date().toISOString(),
        ...fields,
      },
    }),
  );
}

/** A raw SET on the META item that bypasses every store condition and leaves the version alone. */
export async function rawSet(client: DynamoDBClient, ref: SessionRef, name: string, value: unknown): Promise<void> {
  await doc(client).send(
    new UpdateCommand({
      TableName: tableName(),
      Key: { pk: sessionPk(ref), sk: 'META' },
      UpdateExpression: 'SET #n = :v',
      ExpressionAttributeNames: { '#n': name },
      ExpressionAttributeValues: { ':v': value },
    }),
  );
}

export function legacyRef(): SessionRef {
  return { tenantId: `t-${randomUUID()}`, sessionId: `legacy-${randomUUID()}` };
}

export type { StoreTask };
