import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { createDynamoClient, createRedisClient, waitForRedis } from '../../lib/aws-clients.js';

describe('local stack (global setup)', () => {
  it('exposes three Redis nodes and DynamoDB Local with the table', async () => {
    const urls = process.env.REDIS_URLS!.split(',');
    expect(urls).toHaveLength(3);
    for (const u of urls) {
      const r = createRedisClient(u);
      await waitForRedis([r]);
      expect(await r.ping()).toBe('PONG');
      r.disconnect();
    }
    const ddb = createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT });
    const d = await ddb.send(new DescribeTableCommand({ TableName: process.env.TABLE_NAME }));
    expect(d.Table?.TableStatus).toBe('ACTIVE');
    ddb.destroy();
  });
});
