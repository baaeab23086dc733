// API keys (SPEC F2): each key maps to one tenant. Only the SHA-256 of a key is stored,
// so a table dump reveals no usable credential.
//
// Items: `APIKEY#<sha256>` / `APIKEY` is the key itself (what resolve reads). Each key also has
// an index item `APIKEYS` / `K#<sha256>` (tenant, createdAt), written in the same transaction, so
// operators can list and revoke keys with a Query of one small partition instead of a table Scan
// (the table is mostly transcripts). Key creation is operator-rate, so one partition is plenty.
import { createHash, randomBytes } from 'node:crypto';
import {
  GetItemCommand,
  QueryCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  DeleteItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { isExhaustedTransient } from '../aws-errors.js';
import { StoreRetryableError } from '../lineage/errors.js';

/** Tenant ids become part of Redis and DynamoDB keys: no separators, bounded length. */
export const TENANT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const KEY_PREFIX = 'slk_';
const INDEX_PK = 'APIKEYS';
const INDEX_SK_PREFIX = 'K#';

/** Hex chars of the hash shown as a key's id: 48 bits, unique in practice and still short to type. */
export const KEY_ID_LENGTH = 12;

export interface ApiKeyResolver {
  resolve(key: string): Promise<string | null>;
}

/** What operators see of a key: never the key, only its hash and owner. */
export interface ApiKeyInfo {
  keyId: string;
  hash: string;
  tenantId: string;
  createdAt: string;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function keyIdOf(hash: string): string {
  return hash.slice(0, KEY_ID_LENGTH);
}

const keyItemKey = (hash: string): Record<string, AttributeValue> => ({ pk: { S: `APIKEY#${hash}` }, sk: { S: 'APIKEY' } });
const indexItemKey = (hash: string): Record<string, AttributeValue> => ({ pk: { S: INDEX_PK }, sk: { S: `${INDEX_SK_PREFIX}${hash}` } });

export class ApiKeyStore implements ApiKeyResolver {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;

  constructor(opts: { client: DynamoDBClient; tableName: string }) {
    this.client = opts.client;
    this.tableName = opts.tableName;
  }

  /** Creates a new key for the tenant; the plain key is returned once and never stored. */
  async create(tenantId: string): Promise<{ key: string; tenantId: string; keyId: string }> {
    if (!TENANT_ID_PATTERN.test(tenantId)) {
      throw new Error(`invalid tenant id "${tenantId}": use 1-64 letters, digits, '_', '.', '-'`);
    }
    for (;;) {
      const key = KEY_PREFIX + randomBytes(32).toString('base64url');
      const hash = hashApiKey(key);
      const fields = { tenantId: { S: tenantId }, createdAt: { S: new Date().toISOString() } };
      try {
        await this.client.send(
          new TransactWriteItemsCommand({
            TransactItems: [
              {
                Put: {
                  TableName: this.tableName,
                  Item: { ...keyItemKey(hash), ...fields },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
              { Put: { TableName: this.tableName, Item: { ...indexItemKey(hash), ...fields } } },
            ],
          }),
        );
        return { key, tenantId, keyId: keyIdOf(hash) };
      } catch (err) {
        // 256 random bits never collide in practice; if they do, draw again rather than overwrite.
        const collided = err instanceof TransactionCanceledException && err.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed';
        if (!collided) throw err;
      }
    }
  }

  async resolve(key: string): Promise<string | null> {
    if (!key.startsWith(KEY_PREFIX) || key.length > 200) return null;
    const out = await this.client
      .send(new GetItemCommand({ TableName: this.tableName, Key: keyItemKey(hashApiKey(key)), ProjectionExpression: 'tenantId' }))
      .catch((err: unknown) => {
        // Like every store call: a stall or outage the SDK gave up on is "retry later" (503), not a 500.
        throw isExhaustedTransient(err)
          ? new StoreRetryableError(`api key lookup: ${(err as Error).name} after the client's retries`, err, { slow: true })
          : err;
      });
    const tenantId = out.Item?.tenantId?.S;
    return tenantId && TENANT_ID_PATTERN.test(tenantId) ? tenantId : null;
  }

  /** Every key (of one tenant, if given), oldest first. A tenant filter still reads the whole key index. */
  async list(tenantId?: string): Promise<ApiKeyInfo[]> {
    const keys = await this.queryIndex(tenantId === undefined ? {} : { tenantId });
    return keys.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.hash.localeCompare(b.hash));
  }

  /** Keys whose id starts with `keyIdPrefix` (hex): one exact match is what revoke needs. */
  findById(keyIdPrefix: string): Promise<ApiKeyInfo[]> {
    if (!/^[0-9a-f]{1,64}$/.test(keyIdPrefix)) return Promise.resolve([]);
    return this.queryIndex({ hashPrefix: keyIdPrefix });
  }

  /**
   * Deletes the key and its index item in one transaction; false when the key was already gone.
   * Warm API containers may still accept it for up to 60 s (lib/api/api-key-cache.ts).
   */
  async revoke(hash: string): Promise<boolean> {
    try {
      await this.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            { Delete: { TableName: this.tableName, Key: keyItemKey(hash), ConditionExpression: 'attribute_exists(pk)' } },
            { Delete: { TableName: this.tableName, Key: indexItemKey(hash) } },
          ],
        }),
      );
      return true;
    } catch (err) {
      if (!(err instanceof TransactionCanceledException && err.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed')) throw err;
      // The key is gone already; a leftover index item would list a key that cannot be used.
      await this.client.send(new DeleteItemCommand({ TableName: this.tableName, Key: indexItemKey(hash) }));
      return false;
    }
  }

  private async queryIndex(filter: { tenantId?: string; hashPrefix?: string }): Promise<ApiKeyInfo[]> {
    const found: ApiKeyInfo[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const out = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: filter.hashPrefix === undefined ? 'pk = :pk' : 'pk = :pk AND begins_with(sk, :sk)',
          ...(filter.tenantId === undefined ? {} : { FilterExpression: 'tenantId = :t' }),
          ExpressionAttributeValues: {
            ':pk': { S: INDEX_PK },
            ...(filter.hashPrefix === undefined ? {} : { ':sk': { S: `${INDEX_SK_PREFIX}${filter.hashPrefix}` } }),
            ...(filter.tenantId === undefined ? {} : { ':t': { S: filter.tenantId } }),
          },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of out.Items ?? []) {
        const hash = (item.sk?.S ?? '').slice(INDEX_SK_PREFIX.length);
        found.push({ keyId: keyIdOf(hash), hash, tenantId: item.tenantId?.S ?? '?', createdAt: item.createdAt?.S ?? '' });
      }
      start = out.LastEvaluatedKey;
    } while (start);
    return found;
  }
}
