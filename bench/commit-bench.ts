// Full coordinated compaction commit vs the bare DynamoDB transaction it is built around.
import { randomUUID } from 'node:crypto';
import { PutItemCommand, TransactWriteItemsCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { compactSession } from '../lib/compaction/index.js';
import type { LeaseApi } from '../lib/lease/index.js';
import type { LineageStore } from '../lib/lineage/types.js';
import { conversation, fixedEngine } from '../test/support/chaos/engines.js';
import { compare, timeIt, type Comparison } from './stats.js';

export interface CommitBenchResult {
  iterations: number;
  /** lease + beginAttempt + commitRotation + release (engine instant) vs put child + update parent. */
  rotationVsBareTransaction: Comparison;
  inPlaceVsBareTransaction: Comparison;
}

export async function seedSession(store: LineageStore, tenantId: string, messages = 8) {
  const s = await store.createSession({ tenantId, source: 'bench' });
  await store.appendMessages({ tenantId, sessionId: s.sessionId }, conversation(messages));
  return { tenantId, sessionId: s.sessionId };
}

async function bareRotation(ddb: DynamoDBClient, tableName: string): Promise<() => Promise<unknown>> {
  const tenant = `bench-bare-${randomUUID()}`;
  const parent = randomUUID();
  const child = randomUUID();
  const now = new Date().toISOString();
  await ddb.send(
    new PutItemCommand({
      TableName: tableName,
      Item: { pk: { S: `BENCH#${tenant}#${parent}` }, sk: { S: 'SESSION' }, fence: { N: '1' }, createdAt: { S: now } },
    }),
  );
  return () =>
    ddb.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            Put: {
              TableName: tableName,
              Item: {
                pk: { S: `BENCH#${tenant}#${child}` },
                sk: { S: 'SESSION' },
                parentKey: { S: `BENCH#${tenant}#${parent}` },
                createdAt: { S: now },
              },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Update: {
              TableName: tableName,
              Key: { pk: { S: `BENCH#${tenant}#${parent}` }, sk: { S: 'SESSION' } },
              UpdateExpression: 'SET endReason = :r, childSessionId = :c',
              ConditionExpression: 'attribute_not_exists(endReason) AND attribute_not_exists(childSessionId) AND fence = :f',
              ExpressionAttributeValues: { ':r': { S: 'compression' }, ':c': { S: child }, ':f': { N: '1' } },
            },
          },
        ],
      }),
    );
}

export async function benchCommit(
  deps: { lease: LeaseApi; store: LineageStore; ddb: DynamoDBClient; tableName: string },
  iterations: number,
): Promise<CommitBenchResult> {
  const engine = fixedEngine();
  const out: Record<'rotate' | 'in_place', { s: number[]; b: number[] }> = { rotate: { s: [], b: [] }, in_place: { s: [], b: [] } };
  const warmup = 10;
  for (const mode of ['rotate', 'in_place'] as const) {
    for (let i = 0; i < iterations + warmup; i++) {
      const ref = await seedSession(deps.store, `bench-${randomUUID()}`);
      const bare = await bareRotation(deps.ddb, deps.tableName);
      const subject = async () => {
        const r = await compactSession({ lease: deps.lease, store: deps.store, engine, leaseTtlMs: 10_000 }, { ref, mode, origin: 'manual', holder: 'bench' });
        if (r.outcome !== 'compressed') throw new Error(`bench: expected compressed, got ${r.outcome}`);
      };
      let ts: number;
      let tb: number;
      if (i % 2 === 0) {
        ts = await timeIt(subject);
        tb = await timeIt(bare);
      } else {
        tb = await timeIt(bare);
        ts = await timeIt(subject);
      }
      if (i >= warmup) {
        out[mode].s.push(ts);
        out[mode].b.push(tb);
      }
    }
  }
  return {
    iterations,
    rotationVsBareTransaction: compare(out.rotate.s, out.rotate.b),
    inPlaceVsBareTransaction: compare(out.in_place.s, out.in_place.b),
  };
}
