// Builds the consumer from the per-process runtime (Lambda container reuse) and env.
import { createDynamoClient } from '../clients.js';
import type { CompactionLogger } from '../compaction/types.js';
import { getRuntime } from '../runtime.js';
import { AfterTurnConsumer } from './consumer.js';
import { afterTurnPersistence } from './idempotency.js';

export async function consumerFromEnv(env: NodeJS.ProcessEnv = process.env, logger?: CompactionLogger): Promise<AfterTurnConsumer> {
  const runtime = await getRuntime(env, logger ? { logger } : {});
  const { config } = runtime;
  // Its own client: Powertools adds a user-agent middleware to the client it is given.
  const ddb = createDynamoClient({ endpoint: config.DYNAMODB_ENDPOINT, region: config.AWS_REGION, maxAttempts: 3 });
  return new AfterTurnConsumer({
    store: runtime.store,
    compact: (req) => runtime.compact(req),
    thresholdTokens: config.COMPACTION_TOKEN_THRESHOLD,
    mode: config.AFTER_TURN_COMPACTION_MODE,
    persistence: afterTurnPersistence(ddb, config.TABLE_NAME),
    idempotencyTtlSeconds: config.AFTER_TURN_IDEMPOTENCY_TTL_SECONDS,
    ...(logger ? { logger } : {}),
  });
}
