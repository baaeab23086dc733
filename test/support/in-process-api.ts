// For the API tests that drive the real handler in-process: a Runtime on the test stack (the
// servers test/support/global-setup.ts started) and API Gateway HTTP API (v2) events.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { Runtime } from '../../lib/runtime.js';

/**
 * A Runtime on the test stack with the per-tenant limits off: these tests count or time the
 * coordination path alone (the limiter's one Redis call per request is covered by
 * test/e2e/http/tenant-limits.test.ts).
 */
export function testStackRuntime(): Runtime {
  return new Runtime({
    env: {
      REDIS_URLS: process.env.REDIS_URLS!,
      DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT!,
      TABLE_NAME: process.env.TABLE_NAME!,
      RATE_LIMIT_REQUESTS_PER_SECOND: '0',
      RATE_LIMIT_COMPRESSIONS_PER_MINUTE: '0',
      RATE_LIMIT_BODY_BYTES_PER_SECOND: '0',
    },
  });
}

/** The event functions/http.ts receives for one request. */
export function gatewayEvent(
  key: string,
  method: string,
  path: string,
  body?: unknown,
  query?: Record<string, string>,
): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    rawPath: path,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    requestContext: { http: { method, path } },
    ...(query ? { queryStringParameters: query } : {}),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEventV2;
}
