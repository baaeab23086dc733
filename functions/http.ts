// API Gateway HTTP API (payload v2) -> lib/api. Thin adapter: routing, validation and
// error mapping live in lib/api; this file only wires the runtime and the logger.
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { publisherFromEnv, type AfterTurnPublisher } from '../lib/after-turn/publisher.js';
import { handleHttpRequest } from '../lib/api/http-app.js';
import { getRuntime } from '../lib/runtime.js';

const logger = new Logger({ serviceName: 'session-lineage-http' });
let publisher: AfterTurnPublisher | undefined;

async function httpHandler(event: APIGatewayProxyEventV2, context: Context): Promise<APIGatewayProxyStructuredResultV2> {
  const runtime = await getRuntime(process.env, { logger });
  publisher ??= publisherFromEnv(process.env, (message, extra) => logger.warn(message, { ...extra }));
  return handleHttpRequest(
    event,
    {
      store: runtime.store,
      apiKeys: runtime.apiKeys,
      compact: (req) => runtime.compact(req),
      publisher,
      logger,
      maxBodyBytes: runtime.config.MAX_BODY_BYTES,
    },
    {
      requestId: context.awsRequestId,
      ...(typeof context.getRemainingTimeInMillis === 'function' ? { remainingTimeMs: () => context.getRemainingTimeInMillis() } : {}),
    },
  );
}

export const handler = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2>()
  .use(injectLambdaContext(logger))
  .handler(httpHandler);
