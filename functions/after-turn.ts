// SQS after-turn consumer (SPEC F3): a thin middy adapter over lib/after-turn.
// Partial batch response: only the failed records are redelivered.
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterTurnDeps, runtime, type AfterTurnHandlerDeps, type HandlerTelemetry } from '../lib/runtime.js';

export function createAfterTurnHandler(getDeps: () => Promise<AfterTurnHandlerDeps>, { logger }: HandlerTelemetry = runtime) {
  return middy<SQSEvent, SQSBatchResponse, Error, Context>()
    .use(injectLambdaContext(logger))
    .handler(async (event, context) => {
      const { consumer } = await getDeps();
      const report = await consumer.processBatch(
        event.Records.map((r) => ({ messageId: r.messageId, body: r.body })),
        context,
      );
      return { batchItemFailures: report.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
    });
}

export const handler = createAfterTurnHandler(() => afterTurnDeps(runtime));
