// SQS after-turn consumer (SPEC F3): a thin middy adapter over lib/after-turn.
// Partial batch response: only the failed records are redelivered.
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { AfterTurnConsumer } from '../lib/after-turn/consumer.js';
import { consumerFromEnv } from '../lib/after-turn/from-runtime.js';

const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'session-lineage' });

export function createAfterTurnHandler(getConsumer: () => Promise<AfterTurnConsumer>, log: Logger = logger) {
  return middy<SQSEvent, SQSBatchResponse, Error, Context>()
    .use(injectLambdaContext(log))
    .handler(async (event, context) => {
      const consumer = await getConsumer();
      const report = await consumer.processBatch(
        event.Records.map((r) => ({ messageId: r.messageId, body: r.body })),
        context,
      );
      return { batchItemFailures: report.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
    });
}

let consumer: Promise<AfterTurnConsumer> | undefined;

function cachedConsumer(): Promise<AfterTurnConsumer> {
  consumer ??= consumerFromEnv(process.env, logger).catch((err: unknown) => {
    consumer = undefined; // a failed cold start is retried by the next invocation
    throw err;
  });
  return consumer;
}

export const handler = createAfterTurnHandler(cachedConsumer);
