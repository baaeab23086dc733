// API Gateway HTTP API (payload v2) event <-> the API's plain request and response
// (lib/api/http-app.ts): the method, raw path, headers, query and the body, base64 or text.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { handleRequest, type ApiDeps, type HttpRequest, type Invocation } from '../../lib/api/http-app.js';

export function requestOf(event: APIGatewayProxyEventV2): HttpRequest {
  return {
    method: event.requestContext?.http?.method?.toUpperCase() ?? 'GET',
    path: event.rawPath ?? '/',
    headers: event.headers ?? {},
    query: event.queryStringParameters ?? {},
    body: event.body ? Buffer.from(event.body, event.isBase64Encoded ? 'base64' : 'utf8') : Buffer.alloc(0),
  };
}

export function handleHttpRequest(
  event: APIGatewayProxyEventV2,
  deps: ApiDeps,
  inv: Invocation,
): Promise<APIGatewayProxyStructuredResultV2> {
  return handleRequest(requestOf(event), deps, inv);
}
