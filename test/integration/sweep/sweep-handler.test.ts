// The scheduled sweep handler: counts as one structured log line and as EMF metrics (SPEC S2).
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSweepHandler } from '../../../functions/sweep.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { forgeChild, killedRotation, transcript } from './killed-invocation.js';
import { infraTable, storeOnOwnTable } from './own-table.js';
import { jsonLinesWritten } from '../../support/json-output.js';

const endpoint = process.env.DYNAMODB_ENDPOINT!;
let tableName: string;
let ddb: DynamoDBClient;
let store: DynamoLineageStore;

beforeAll(async () => {
  ({ ddb, tableName, store } = await storeOnOwnTable('sweep-handler'));
});
afterAll(() => ddb.destroy());

const context = {
  functionName: 'session-lineage-test-sweep',
  awsRequestId: randomUUID(),
  getRemainingTimeInMillis: () => 60_000,
} as unknown as Context;

async function newSession(): Promise<SessionRef> {
  const r = await store.createSession({ tenantId: `t-${randomUUID()}` });
  if (r.replayed) throw new Error('unexpected replay');
  return { tenantId: r.session.tenantId, sessionId: r.session.sessionId };
}

describe('sweep handler (SPEC S1, S2)', () => {
  it('S1/S2: reports cleaned attempts, orphans removed and forks as one log line and as EMF metrics', async () => {
    const ref = await newSession();
    await store.appendItems(ref, { prepare: asIs(transcript(4)) });
    const killed = await killedRotation({ endpoint, tableName, ref, leaseExpiresAt: Date.now() - 1 });
    const parentRef = await newSession();
    await forgeChild(ddb, tableName, parentRef);
    await forgeChild(ddb, tableName, parentRef);

    const logger = new Logger({ serviceName: 'sweep-test' });
    const metrics = new Metrics({ serviceName: 'sweep-test', namespace: 'SessionLineageTest' });
    const handler = createSweepHandler(async () => ({ store }), { logger, metrics });
    const { value, lines } = await jsonLinesWritten(() => handler({}, context));

    expect(value).toMatchObject({ expiredAttemptsCleaned: 1, orphanMessagesRemoved: killed.orphanMessages, forksFound: 1 });
    const emf = lines.find((l) => '_aws' in l);
    expect(emf).toMatchObject({ ExpiredAttemptsCleaned: 1, OrphansRemoved: killed.orphanMessages, ForksFound: 1 });
    const names = (emf?._aws as { CloudWatchMetrics: { Namespace: string; Metrics: { Name: string }[] }[] }).CloudWatchMetrics[0];
    expect(names?.Namespace).toBe('SessionLineageTest');
    expect(names?.Metrics.map((m) => m.Name).sort()).toEqual(['ExpiredAttemptsCleaned', 'ForksFound', 'OrphansRemoved']);
    const log = lines.filter((l) => typeof l.message === 'string' && String(l.message).startsWith('sweep finished'));
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ level: 'ERROR', expiredAttemptsCleaned: 1, forksFound: 1, forks: [{ ...parentRef }] });
  });

  it('S2: a clean table still emits ForksFound = 0 (an alarm needs data points)', async () => {
    const own = await infraTable(ddb, 'sweep-empty');
    const logger = new Logger({ serviceName: 'sweep-test' });
    const metrics = new Metrics({ serviceName: 'sweep-test', namespace: 'SessionLineageTest' });
    const handler = createSweepHandler(async () => ({ store: new DynamoLineageStore({ client: ddb, tableName: own }) }), {
      logger,
      metrics,
    });
    const { value, lines } = await jsonLinesWritten(() => handler({}, context));
    expect(value).toMatchObject({ expiredAttemptsCleaned: 0, orphanMessagesRemoved: 0, forksFound: 0 });
    expect(lines.find((l) => '_aws' in l)).toMatchObject({ ExpiredAttemptsCleaned: 0, OrphansRemoved: 0, ForksFound: 0 });
    expect(lines.find((l) => l.message === 'sweep finished')).toMatchObject({ level: 'INFO', forksFound: 0 });
  });
});
