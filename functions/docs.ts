// GET /openapi.json and GET /docs (+ its assets), no authentication: a thin API Gateway HTTP API
// (payload v2) adapter over lib/api/api-docs.ts. Its own function, so the http function's bundle
// and cold start carry neither the document nor Swagger UI. Swagger UI's files are not in this
// bundle either: infra/build.ts writes them gzipped beside it (`<file>.gz` in .esbuild/docs/, packaged
// with it), and they are read from there on the first request that needs each.
import { readFile } from 'node:fs/promises';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { createDocsResponder, gzippedAssetName, serverUrlOf } from '../lib/api/api-docs.js';
import openapi from './openapi.json' with { type: 'json' };

const respond = createDocsResponder({
  openapi: JSON.stringify(openapi),
  // Relative to this bundle's own file (.esbuild/docs/index.mjs, in the Lambda or under serverless-offline).
  readGzippedAsset: (file) => readFile(new URL(gzippedAssetName(file), import.meta.url)),
});

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const method = event.requestContext?.http?.method?.toUpperCase() ?? 'GET';
  const header = (name: string) => Object.entries(event.headers ?? {}).find(([k]) => k.toLowerCase() === name)?.[1];
  const serverUrl = serverUrlOf(header('host') ?? event.requestContext?.domainName, header('x-forwarded-proto'));
  const r = await respond(method, event.rawPath ?? '/', header('accept-encoding'), serverUrl);
  const binary = Buffer.isBuffer(r.body);
  return {
    statusCode: r.status,
    headers: r.headers,
    body: binary ? (r.body as Buffer).toString('base64') : (r.body as string),
    isBase64Encoded: binary,
  };
}
