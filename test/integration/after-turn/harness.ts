// Real pieces for after-turn tests: DynamoDB Local store, Redlock lease on the global
// Redis nodes, the extractive engine behind a call counter, and a Lambda-like context.
import { createHash, randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import type { Redis } from 'ioredis';
import { AfterTurnConsumer, type AfterTurnConsumerDeps } from '../../../lib/after-turn/consumer.js';
import { afterTurnPersistence, idempotencyPk } from '../../../lib/after-turn/idempotency.js';
import { createDynamoClient, createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { compactSession } from '../../../lib/compaction/compact-session.js';
import type { CompressionEngine, CompressOptionName, Transcript } from '../../../lib/compressors/types.js';
import { SUMMARY_PREFIX, type Item } from '../../../lib/items/types.js';
import { SessionLease } from '../../../lib/lease/session-lease.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { SessionRef } from '../../../lib/session-ref.js';

export const tableName = () => process.env.TABLE_NAME!;

/** Keeps the first and last two items around a summary, and counts its calls (the engines have their own tests). */
export class CountingEngine implements CompressionEngine {
  readonly name = 'counting';
  readonly acceptedOptions: readonly CompressOptionName[] = [];
  calls = 0;
  async compress({ items }: Transcript) {
    this.calls++;
    return { items: [items[0]!, { role: 'assistant', content: `${SUMMARY_PREFIX} ${items.length - 3} items` }, ...items.slice(-2)] };
  }
}

export function transcript(n: number, words = 40, tag = randomUUID().slice(0, 4)): Item[] {
  return Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: Array.from({ length: words }, (_, w) => `${tag} turn${i} word${w} lorem${(i * 31 + w * 7) % 97}`).join(' '),
  }));
}

export interface Harness {
  ddb: DynamoDBClient;
  store: DynamoLineageStore;
  lease: SessionLease;
  redis: Redis[];
  close(): Promise<void>;
}

export async function harness(redisUrls = process.env.REDIS_URLS!.split(',')): Promise<Harness> {
  const redis = createRedisClients(redisUrls);
  await waitForRedis(redis);
  const ddb = createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT, maxAttempts: 3 });
  const store = new DynamoLineageStore({ client: ddb, tableName: tableName() });
  const lease = new SessionLease({ clients: redis });
  return {
    ddb,
    store,
    lease,
    redis,
    async close() {
      redis.forEach((r) => r.disconnect());
      ddb.destroy();
    },
  };
}

export function consumerFor(
  h: Pick<Harness, 'ddb' | 'store' | 'lease'>,
  engine: CompressionEngine,
  overrides: Partial<AfterTurnConsumerDeps> = {},
): AfterTurnConsumer {
  return new AfterTurnConsumer({
    store: h.store,
    compact: (req) => compactSession({ lease: h.lease, store: h.store, engine, leaseTtlMs: 10_000 }, req),
    thresholdTokens: 1000,
    mode: 'rotate',
    persistence: afterTurnPersistence(h.ddb, tableName()),
    idempotencyTtlSeconds: 3600,
    ...overrides,
  });
}

export async function seed(store: DynamoLineageStore, items: readonly Item[]): Promise<SessionRef> {
  const r = await store.createSession({ tenantId: `t-${randomUUID()}`, source: 'after-turn-test' });
  if (r.replayed) throw new Error('unexpected replay');
  const ref = { tenantId: r.session.tenantId, sessionId: r.session.sessionId };
  await store.appendItems(ref, { prepare: asIs(items) });
  return ref;
}

export function lambdaContext(remainingMs = 60_000): Context {
  const deadline = Date.now() + remainingMs;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'slc-test-afterTurn',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:slc-test-afterTurn',
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: '/aws/lambda/slc-test-afterTurn',
    logStreamName: 'test',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** The idempotency record Powertools keeps for an SQS messageId: its own partition, sk = prefix + md5 of the JSON key. */
export async function idempotencyRecord(
  ddb: DynamoDBClient,
  messageId: string,
  table = tableName(),
): Promise<Record<string, unknown> | undefined> {
  const sk = `after-turn#${createHash('md5').update(JSON.stringify(messageId)).digest('base64')}`;
  const out = await DynamoDBDocumentClient.from(ddb).send(
    new GetCommand({ TableName: table, Key: { pk: idempotencyPk(messageId), sk }, ConsistentRead: true }),
  );
  return out.Item;
}

export function body(ref: SessionRef, origin: 'turn' | 'review' | 'manual' = 'turn'): string {
  return JSON.stringify({ ...ref, origin });
}
