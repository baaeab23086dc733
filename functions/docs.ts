// GET /openapi.json and GET /docs (+ its assets), no authentication: a thin API Gateway HTTP API
// (payload v2) adapter over lib/api/api-docs.ts. Its own function, so the http function's bundle
// and cold start carry neither the document nor Swagger UI (1.9 MB, inlined here as text by esbuild).
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import swaggerUiJs from 'swagger-ui-dist/swagger-ui-bundle.js' with { type: 'text' };
import swaggerUiCss from 'swagger-ui-dist/swagger-ui.css' with { type: 'text' };
import { createDocsResponder } from '../lib/api/api-docs.js';
import openapi from './openapi.json' with { type: 'json' };

const respond = createDocsResponder({ openapi: JSON.stringify(openapi), swaggerUiJs, swaggerUiCss });

export function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const method = event.requestContext?.http?.method?.toUpperCase() ?? 'GET';
  const acceptEncoding = Object.entries(event.headers ?? {}).find(([k]) => k.toLowerCase() === 'accept-encoding')?.[1];
  const r = respond(method, event.rawPath ?? '/', acceptEncoding);
  const binary = Buffer.isBuffer(r.body);
  return Promise.resolve({
    statusCode: r.status,
    headers: r.headers,
    body: binary ? (r.body as Buffer).toString('base64') : (r.body as string),
    isBase64Encoded: binary,
  });
}
