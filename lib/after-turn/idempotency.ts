// Redelivery guard (SPEC F3): Powertools idempotency keyed by the SQS messageId, its
// records in our own table. See README.md for why this and not a hand-written record.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Context } from 'aws-lambda';

/** Partition holding every after-turn idempotency record; no lineage key starts like this. */
export const IDEMPOTENCY_PK = 'IDEMPOTENCY#after-turn';
const KEY_PREFIX = 'after-turn';

export function afterTurnPersistence(client: DynamoDBClient, tableName: string): DynamoDBPersistenceLayer {
  return new DynamoDBPersistenceLayer({
    tableName,
    awsSdkV3Client: client,
    keyAttr: 'pk',
    sortKeyAttr: 'sk',
    staticPkValue: IDEMPOTENCY_PK,
    // The table's TTL attribute: DynamoDB deletes remembered messageIds once they expire.
    expiryAttr: 'expiresAt',
  });
}

export interface RemainingTime {
  getRemainingTimeInMillis(): number;
}

/**
 * Wraps `fn` so a given messageId runs it at most once to completion. A run that
 * throws deletes its in-progress record (the retry runs again); a run that never
 * finishes (crash, timeout) is retried once the invocation's remaining time at start
 * has passed, because the in-progress record carries that expiry.
 */
export function idempotentPerMessage<P extends { messageId: string }, R>(
  fn: (payload: P) => Promise<R>,
  persistence: DynamoDBPersistenceLayer,
  opts: { ttlSeconds: number; invocation: RemainingTime },
): (payload: P) => Promise<R> {
  // A config per invocation: it carries this invocation's remaining time.
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'messageId',
    throwOnNoIdempotencyKey: true,
    expiresAfterSeconds: opts.ttlSeconds,
  });
  // Powertools only reads getRemainingTimeInMillis from the context.
  config.registerLambdaContext(opts.invocation as Context);
  return makeIdempotent(fn, { persistenceStore: persistence, config, keyPrefix: KEY_PREFIX });
}
