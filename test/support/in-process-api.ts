// An API Gateway HTTP API (v2) event for one request, as functions/http.ts receives it: the
// in-process API tests drive the real handler with these.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

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
