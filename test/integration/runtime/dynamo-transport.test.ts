// lib/aws-clients.ts's DynamoDB transport against DynamoDB Local behind a faulty TCP proxy: the SDK's
// standard retry strategy resends after a transport error (a transaction keeps its
// ClientRequestToken, so it applies once), and a stalled endpoint fails a call within the
// configured request timeout instead of hanging until the Lambda timeout (issue 11 item 6).
import { randomUUID } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureTable } from '../../../infra/table.js';
import { createDynamoClient } from '../../../lib/aws-clients.js';
import { startFaultyProxy, type FaultyProxy, type ProxyFault } from './tcp-proxy.js';

const dynamodb = process.env.DYNAMODB_ENDPOINT!;
const tableName = `transport-${randomUUID().slice(0, 8)}`;
const direct = createDynamoClient({ endpoint: dynamodb });
const open: { proxy: FaultyProxy; client: DynamoDBClient }[] = [];

beforeAll(() => ensureTable(direct, tableName));
afterEach(async () => {
  for (const { proxy, client } of open.splice(0)) {
    client.destroy();
    await proxy.close();
  }
});
afterAll(() => direct.destroy());

async function through(fault: ProxyFault, opts: Parameters<typeof createDynamoClient>[0] = {}) {
  const proxy = await startFaultyProxy(dynamodb, fault);
  const client = createDynamoClient({ ...opts, endpoint: proxy.endpoint });
  open.push({ proxy, client });
  return { proxy, client };
}

const key = () => ({ pk: { S: `TRANSPORT#${randomUUID()}` }, sk: { S: 'ITEM' } });
const putNew = (k: ReturnType<typeof key>) =>
  new PutItemCommand({ TableName: tableName, Item: { ...k, v: { S: 'once' } }, ConditionExpression: 'attribute_not_exists(pk)' });
const read = async (k: ReturnType<typeof key>) =>
  (await direct.send(new GetItemCommand({ TableName: tableName, Key: k, ConsistentRead: true }))).Item;

describe('DynamoDB transport (lib/aws-clients.ts)', () => {
  it('a conditional PutItem whose connection is reset before DynamoDB saw it is resent and lands once', async () => {
    const { proxy, client } = await through('reset-first-request');
    const k = key();
    await expect(client.send(putNew(k))).resolves.toBeDefined();
    expect(proxy.connections).toBe(2);
    expect(proxy.forwardedBodies).toHaveLength(1);
    expect(await read(k)).toMatchObject({ v: { S: 'once' } });
  });

  it('a TransactWriteItems whose response is lost after it committed is resent with the same ClientRequestToken and applied once', async () => {
    const { proxy, client } = await through('drop-first-response');
    const created = key();
    const counter = key();
    await direct.send(new PutItemCommand({ TableName: tableName, Item: { ...counter, n: { N: '0' } } }));
    const token = randomUUID();
    const out = client.send(
      new TransactWriteItemsCommand({
        ClientRequestToken: token,
        TransactItems: [
          { Put: { TableName: tableName, Item: { ...created, v: { S: 'once' } }, ConditionExpression: 'attribute_not_exists(pk)' } },
          {
            Update: {
              TableName: tableName,
              Key: counter,
              UpdateExpression: 'ADD n :one',
              ExpressionAttributeValues: { ':one': { N: '1' } },
            },
          },
        ],
      }),
    );
    await expect(out).resolves.toBeDefined();
    // Both tries reached DynamoDB, carrying one token; DynamoDB answered the resend from its idempotency record.
    expect(proxy.forwardedBodies).toHaveLength(2);
    expect(proxy.forwardedBodies.map((b) => (JSON.parse(b) as { ClientRequestToken: string }).ClientRequestToken)).toEqual([token, token]);
    expect(await read(counter)).toMatchObject({ n: { N: '1' } });
    expect(await read(created)).toMatchObject({ v: { S: 'once' } });
  });

  it('a transaction sent without a token gets one from the SDK, kept across the resend', async () => {
    const { proxy, client } = await through('drop-first-response');
    const counter = key();
    await direct.send(new PutItemCommand({ TableName: tableName, Item: { ...counter, n: { N: '0' } } }));
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            Update: {
              TableName: tableName,
              Key: counter,
              UpdateExpression: 'ADD n :one',
              ExpressionAttributeValues: { ':one': { N: '1' } },
            },
          },
        ],
      }),
    );
    const tokens = proxy.forwardedBodies.map((b) => (JSON.parse(b) as { ClientRequestToken?: string }).ClientRequestToken);
    expect(tokens).toHaveLength(2);
    expect(tokens[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(tokens[1]).toBe(tokens[0]);
    expect(await read(counter)).toMatchObject({ n: { N: '1' } });
  });

  // Not a property of our code but of DynamoDB, pinned here for lib/lineage: only a token-carrying
  // transaction is idempotent. A bare conditional write that landed before its response was lost
  // comes back ConditionalCheckFailed on the SDK's resend, though it was ours and applied once.
  it('a conditional PutItem whose response is lost is resent and answered ConditionalCheckFailed (applied once)', async () => {
    const { proxy, client } = await through('drop-first-response');
    const k = key();
    await expect(client.send(putNew(k))).rejects.toBeInstanceOf(ConditionalCheckFailedException);
    expect(proxy.forwardedBodies).toHaveLength(2);
    expect(await read(k)).toMatchObject({ v: { S: 'once' } });
  });

  it('a stalled DynamoDB fails a call after maxAttempts x requestTimeout, not at the Lambda timeout', async () => {
    const { proxy, client } = await through('stall', { maxAttempts: 2, requestTimeoutMs: 400, connectTimeoutMs: 200 });
    const started = Date.now();
    const err = await client.send(putNew(key())).catch((e: unknown) => e);
    const elapsed = Date.now() - started;
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).name).toBe('TimeoutError');
    // Two tries of 400 ms plus the SDK's jittered backoff (base 100 ms): about a second, with room for a busy machine.
    expect(proxy.connections).toBe(2);
    expect(elapsed).toBeGreaterThanOrEqual(2 * 400);
    expect(elapsed).toBeLessThan(3_000);
  });

  it('the defaults bound a call: 3 tries of at most 5 s each', async () => {
    const client = createDynamoClient({ endpoint: dynamodb });
    try {
      expect(await client.config.maxAttempts()).toBe(3);
      expect(await client.config.retryStrategy()).toMatchObject({ mode: 'standard' });
      const handler = client.config.requestHandler as { httpHandlerConfigs(): Record<string, unknown> };
      // The handler resolves its config on first use.
      await client.send(new GetItemCommand({ TableName: 'none', Key: key() })).catch(() => undefined);
      expect(handler.httpHandlerConfigs()).toMatchObject({ connectionTimeout: 1_000, requestTimeout: 5_000, throwOnRequestTimeout: true });
    } finally {
      client.destroy();
    }
  });
});
