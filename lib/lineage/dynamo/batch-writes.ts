// Batch calls in pages (BatchWriteItem: 25 requests, BatchGetItem: 100 keys), re-sending what
// DynamoDB left unprocessed with backoff (bounded).
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { StoreRetryableError } from '../errors.js';
import { backoffDelay, DEFAULT_RETRY, sleep, withRetry, type RetryOptions } from './retry.js';

type WriteRequest = { PutRequest: { Item: Record<string, unknown> } } | { DeleteRequest: { Key: Record<string, unknown> } };

const WRITE_PAGE = 25;
export const MAX_UNPROCESSED_ROUNDS = 8;

/**
 * Sends `requests` `page` at a time; `send` answers what DynamoDB left unprocessed of what it
 * sent, which is sent again after a backoff, at most MAX_UNPROCESSED_ROUNDS times a page.
 */
export async function inPages<T>(
  what: string,
  requests: readonly T[],
  page: number,
  retry: RetryOptions,
  send: (pending: T[]) => Promise<T[]>,
): Promise<void> {
  for (let i = 0; i < requests.length; i += page) {
    let pending = requests.slice(i, i + page);
    for (let round = 0; pending.length > 0; round++) {
      // Unprocessed items are DynamoDB's throttling of a batch: the store was slow, not the session busy.
      if (round >= MAX_UNPROCESSED_ROUNDS)
        throw new StoreRetryableError(`${what}: ${pending.length} items unprocessed`, undefined, { slow: true });
      if (round > 0) await sleep(backoffDelay(round, retry));
      pending = await send(pending);
    }
  }
}

function writeAll(
  doc: DynamoDBDocumentClient,
  tableName: string,
  requests: WriteRequest[],
  retry: RetryOptions = DEFAULT_RETRY,
): Promise<void> {
  return inPages('batch write', requests, WRITE_PAGE, retry, async (pending) => {
    const out = await withRetry('batch write', () => doc.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } })), retry);
    return (out.UnprocessedItems?.[tableName] ?? []) as WriteRequest[];
  });
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
