// BatchWriteItem in 25-item pages, re-sending UnprocessedItems with backoff (bounded).
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { StoreRetryableError } from '../errors.js';
import { backoffDelay, DEFAULT_RETRY, sleep, withRetry, type RetryOptions } from './retry.js';

type WriteRequest = { PutRequest: { Item: Record<string, unknown> } } | { DeleteRequest: { Key: Record<string, unknown> } };

const PAGE = 25;
const MAX_UNPROCESSED_ROUNDS = 8;

async function writeAll(
  doc: DynamoDBDocumentClient,
  tableName: string,
  requests: WriteRequest[],
  retry: RetryOptions = DEFAULT_RETRY,
): Promise<void> {
  for (let i = 0; i < requests.length; i += PAGE) {
    let pending = requests.slice(i, i + PAGE);
    for (let round = 0; pending.length > 0; round++) {
      if (round >= MAX_UNPROCESSED_ROUNDS) throw new StoreRetryableError(`batch write: ${pending.length} items unprocessed`);
      if (round > 0) await sleep(backoffDelay(round, retry));
      const out = await withRetry('batch write', () => doc.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } })), retry);
      pending = (out.UnprocessedItems?.[tableName] ?? []) as WriteRequest[];
    }
  }
}

export function putAll(doc: DynamoDBDocumentClient, tableName: string, items: object[], retry?: RetryOptions): Promise<void> {
  return writeAll(
    doc,
    tableName,
    items.map((Item) => ({ PutRequest: { Item: Item as Record<string, unknown> } })),
    retry,
  );
}

export function deleteAll(
  doc: DynamoDBDocumentClient,
  tableName: string,
  keys: { pk: string; sk: string }[],
  retry?: RetryOptions,
): Promise<void> {
  return writeAll(
    doc,
    tableName,
    keys.map((k) => ({ DeleteRequest: { Key: { pk: k.pk, sk: k.sk } } })),
    retry,
  );
}
