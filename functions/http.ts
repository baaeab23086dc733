// API Gateway HTTP API (payload v2) -> lib/api. Thin adapter: routing, validation and
// error mapping live in lib/api; lib/runtime.ts builds the deps.
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { ApiDeps } from '../lib/api/http-app.js';
import { handleHttpRequest } from './adapters/api-gateway.js';
import { httpDeps, runtime, type HandlerTelemetry } from '../lib/runtime.js';

export function createHttpHandler(getDeps: () => Promise<ApiDeps>, { logger }: HandlerTelemetry = runtime) {
  return middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context>()
    .use(injectLambdaContext(logger))
    .handler(async (event, context) =>
      handleHttpRequest(event, await getDeps(), {
        requestId: context.awsRequestId,
        // serverless-offline's context may lack it; compaction then runs without the C9 time check.
        ...(typeof context.getRemainingTimeInMillis === 'function' ? { remainingTimeMs: () => context.getRemainingTimeInMillis() } : {}),
      }),
    );
}

export const handler = createHttpHandler(() => httpDeps(runtime));
