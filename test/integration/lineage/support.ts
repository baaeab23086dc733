// Shared setup for lineage-store integration tests against DynamoDB Local (global setup).
import { randomUUID } from 'node:crypto';
import { GetCommand, QueryCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../../lib/clients.js';
import { DynamoLineageStore, type DynamoLineageStoreOptions } from '../../../lib/lineage/index.js';
import { sessionPk } from '../../../lib/lineage/keys.js';
import type { Message } from '../../../lib/messages.js';
import { sessionKey, type SessionRef } from '../../../lib/session-ref.js';

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

export function msg(i: number, role: Message['role'] = i % 2 ? 'assistant' : 'user'): Message {
  return { role, content: `message ${i}` };
}

export function msgs(from: number, to: number): Message[] {
  return Array.from({ length: to - from + 1 }, (_, k) => msg(from + k));
}

export async function newSession(store: DynamoLineageStore, messages: Message[] = msgs(1, 6)): Promise<SessionRef> {
  const s = await store.createSession({ tenantId: `t-${randomUUID()}` });
  const ref = { tenantId: s.tenantId, sessionId: s.sessionId };
  if (messages.length) await store.appendMessages(ref, messages);
  return ref;
}

/** Begins an attempt the way compaction does: a fresh fence from the store, then beginAttempt. */
export async function begin(store: DynamoLineageStore, ref: SessionRef, holder = `h-${randomUUID()}`) {
  const fence = await store.nextFence(sessionKey(ref));
  return store.beginAttempt(ref, { holder, fence, leaseExpiresAt: Date.now() + 30_000 });
}

/** Raw items under a session's pk (bypassing the store), e.g. to prove nothing was left behind. */
export async function rawItems(client: DynamoDBClient, ref: SessionRef): Promise<Record<string, unknown>[]> {
  const doc = DynamoDBDocumentClient.from(client);
  const out = await doc.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': sessionPk(ref) },
      ConsistentRead: true,
    }),
  );
  return out.Items ?? [];
}

export async function rawMeta(client: DynamoDBClient, ref: SessionRef): Promise<Record<string, unknown> | undefined> {
  const doc = DynamoDBDocumentClient.from(client);
  const out = await doc.send(new GetCommand({ TableName: tableName(), Key: { pk: sessionPk(ref), sk: 'META' }, ConsistentRead: true }));
  return out.Item;
}
