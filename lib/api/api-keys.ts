// API keys (SPEC F2): each key maps to one tenant. Only the SHA-256 of a key is stored,
// so a table dump reveals no usable credential.
import { createHash, randomBytes } from 'node:crypto';
import { ConditionalCheckFailedException, GetItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { isExhaustedTransient } from '../lineage/dynamo/retry.js';
import { StoreRetryableError } from '../lineage/errors.js';

/** Tenant ids become part of Redis and DynamoDB keys: no separators, bounded length. */
export const TENANT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const KEY_PREFIX = 'slk_';

export interface ApiKeyResolver {
  resolve(key: string): Promise<string | null>;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export class ApiKeyStore implements ApiKeyResolver {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;

  constructor(opts: { client: DynamoDBClient; tableName: string }) {
    this.client = opts.client;
    this.tableName = opts.tableName;
  }

  /** Creates a new key for the tenant; the plain key is returned once and never stored. */
  async create(tenantId: string): Promise<{ key: string; tenantId: string }> {
    if (!TENANT_ID_PATTERN.test(tenantId)) {
      throw new Error(`invalid tenant id "${tenantId}": use 1-64 letters, digits, '_', '.', '-'`);
    }
    for (;;) {
      const key = KEY_PREFIX + randomBytes(32).toString('base64url');
      try {
        await this.client.send(
          new PutItemCommand({
            TableName: this.tableName,
            Item: {
              pk: { S: `APIKEY#${hashApiKey(key)}` },
              sk: { S: 'APIKEY' },
              tenantId: { S: tenantId },
              createdAt: { S: new Date().toISOString() },
            },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
        return { key, tenantId };
      } catch (err) {
        // 256 random bits never collide in practice; if they do, draw again rather than overwrite.
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
      }
    }
  }

  async resolve(key: string): Promise<string | null> {
    if (!key.startsWith(KEY_PREFIX) || key.length > 200) return null;
    const out = await this.client
      .send(
        new GetItemCommand({
          TableName: this.tableName,
          Key: { pk: { S: `APIKEY#${hashApiKey(key)}` }, sk: { S: 'APIKEY' } },
          ProjectionExpression: 'tenantId',
        }),
      )
      .catch((err: unknown) => {
        // Like every store call: a stall or outage the SDK gave up on is "retry later" (503), not a 500.
        throw isExhaustedTransient(err) ? new StoreRetryableError(`api key lookup: ${(err as Error).name} after the client's retries`, err) : err;
      });
    const tenantId = out.Item?.tenantId?.S;
    return tenantId && TENANT_ID_PATTERN.test(tenantId) ? tenantId : null;
  }
}
