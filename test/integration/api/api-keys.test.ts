// API keys against DynamoDB Local (SPEC F2): only hashes are stored; a key resolves to its tenant.
import { randomUUID } from 'node:crypto';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { ApiKeyStore, hashApiKey, keyIdOf } from '../../../lib/api/api-keys.js';
import { createDynamoClient } from '../../../lib/aws-clients.js';

const client = createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT, maxAttempts: 3 });
const tableName = process.env.TABLE_NAME!;
const keys = new ApiKeyStore({ client, tableName });

afterAll(() => client.destroy());

describe('ApiKeyStore', () => {
  it('F2: create returns a fresh key that resolves to its tenant; the table holds only its SHA-256', async () => {
    const tenant = `t-${randomUUID().slice(0, 8)}`;
    const a = await keys.create(tenant);
    const b = await keys.create(tenant);
    expect(a.key).not.toBe(b.key);
    expect(await keys.resolve(a.key)).toBe(tenant);
    expect(await keys.resolve(b.key)).toBe(tenant);
    const item = await client.send(
      new GetItemCommand({ TableName: tableName, Key: { pk: { S: `APIKEY#${hashApiKey(a.key)}` }, sk: { S: 'APIKEY' } } }),
    );
    expect(item.Item?.tenantId?.S).toBe(tenant);
    expect(JSON.stringify(item.Item)).not.toContain(a.key);
  });

  it('F2: unknown, truncated or foreign-looking keys resolve to null', async () => {
    const { key } = await keys.create(`t-${randomUUID().slice(0, 8)}`);
    expect(await keys.resolve(key.slice(0, -1))).toBeNull();
    expect(await keys.resolve(`${key}x`)).toBeNull();
    expect(await keys.resolve('')).toBeNull();
    expect(await keys.resolve(hashApiKey(key))).toBeNull();
  });

  it('F2: tenant ids that could escape a key are refused', async () => {
    for (const bad of ['a/b', '', ' x', 'x'.repeat(65), 'APIKEY#1']) {
      await expect(keys.create(bad), bad).rejects.toThrow(/invalid tenant id/);
    }
  });

  it('list / findById read the key index (no Scan); revoke deletes key and index item, so the key stops resolving', async () => {
    const tenant = `t-${randomUUID().slice(0, 8)}`;
    const other = `t-${randomUUID().slice(0, 8)}`;
    const a = await keys.create(tenant);
    const b = await keys.create(tenant);
    await keys.create(other);
    expect(a.keyId).toBe(keyIdOf(hashApiKey(a.key)));
    const listed = await keys.list(tenant);
    expect(listed.map((k) => k.keyId).sort()).toEqual([a.keyId, b.keyId].sort());
    expect(listed.every((k) => k.tenantId === tenant && !JSON.stringify(k).includes(a.key))).toBe(true);
    expect((await keys.list()).map((k) => k.tenantId)).toEqual(expect.arrayContaining([tenant, other]));
    expect((await keys.findById(a.keyId)).map((k) => k.hash)).toEqual([hashApiKey(a.key)]);

    expect(await keys.revoke(hashApiKey(a.key))).toBe(true);
    expect(await keys.resolve(a.key)).toBeNull();
    expect(await keys.resolve(b.key)).toBe(tenant);
    expect((await keys.list(tenant)).map((k) => k.keyId)).toEqual([b.keyId]);
    expect(await keys.findById(a.keyId)).toEqual([]);
    expect(await keys.revoke(hashApiKey(a.key))).toBe(false);
  });
});
