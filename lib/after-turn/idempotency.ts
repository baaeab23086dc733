// Redelivery guard (SPEC F3): Powertools idempotency keyed by the SQS messageId, its records in
// our own table. See README.md for why this and not a hand-written record. Each message id gets
// its own partition (`IDEMPOTENCY#after-turn#<messageId>`): one static partition for every
// record is a hot key (Powertools issue #3781) that caps the whole service.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';

/** Prefix of every after-turn idempotency record's partition; no lineage key starts like this. */
export const IDEMPOTENCY_PK_PREFIX = 'IDEMPOTENCY#after-turn#';
const KEY_PREFIX = 'after-turn';

export function idempotencyPk(messageId: string): string {
  return `${IDEMPOTENCY_PK_PREFIX}${messageId}`;
}

/** Builds the persistence layer for one message id (its own partition). */
export type PersistenceFor = (messageId: string) => DynamoDBPersistenceLayer;

export function afterTurnPersistence(client: DynamoDBClient, tableName: string): PersistenceFor {
  return (messageId) =>
    new DynamoDBPersistenceLayer({
      tableName,
      awsSdkV3Client: client,
      keyAttr: 'pk',
      sortKeyAttr: 'sk',
      staticPkValue: idempotencyPk(messageId),
      // The table's TTL attribute: DynamoDB deletes remembered messageIds once they expire.
      expiryAttr: 'expiresAt',
    });
}

/** The Lambda context type, as Powertools declares it (lib/ imports no `aws-lambda` types). */
type LambdaContext = Parameters<IdempotencyConfig['registerLambdaContext']>[0];

export interface RemainingTime {
  getRemainingTimeInMillis(): number;
}

/**
 * Runs `fn` at most once to completion for `payload.messageId`. A run that throws deletes its
 * in-progress record (the retry runs again); a run that never finishes (crash, timeout) is
 * retried once the invocation's remaining time at start has passed, because the in-progress
 * record carries that expiry.
 */
export function idempotentPerMessage<P extends { messageId: string }, R>(
  fn: (payload: P) => Promise<R>,
  persistenceFor: PersistenceFor,
  opts: { ttlSeconds: number; invocation: RemainingTime },
): (payload: P) => Promise<R> {
  return (payload) => {
    // A config per invocation: it carries this invocation's remaining time.
    const config = new IdempotencyConfig({
      eventKeyJmesPath: 'messageId',
      throwOnNoIdempotencyKey: true,
      expiresAfterSeconds: opts.ttlSeconds,
    });
    // Powertools only reads getRemainingTimeInMillis from the Lambda context it is given; the
    // consumer hands us just that (functions/after-turn.ts passes the real context).
    config.registerLambdaContext(opts.invocation as LambdaContext);
    return makeIdempotent(fn, { persistenceStore: persistenceFor(payload.messageId), config, keyPrefix: KEY_PREFIX })(payload);
  };
}
