// The HTTP API as one function of an API Gateway HTTP API (payload v2) event: authenticate,
// route, check the body, run the route, map every error to `{error: {code, message}}`.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { ApiKeyResolver } from './api-keys.js';
import { fromDomainError, HttpError, invalidRequest } from './errors.js';
import { matchRoute, type RouteDeps, type RouteResult } from './routes.js';
import { sessionIdParam } from './schemas.js';

export const DEFAULT_MAX_BODY_BYTES = 1_048_576;

export interface ApiDeps extends RouteDeps {
  apiKeys: ApiKeyResolver;
  maxBodyBytes?: number;
}

export interface Invocation {
  requestId: string;
  /** Lambda context.getRemainingTimeInMillis, handed to compaction (SPEC C9). */
  remainingTimeMs?: () => number;
}

const paramSchemas: Record<string, typeof sessionIdParam> = { id: sessionIdParam };

function json(status: number, body: unknown, headers: Record<string, string> = {}): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: JSON.stringify(body),
  };
}

function errorResponse(err: HttpError, requestId: string): APIGatewayProxyStructuredResultV2 {
  return json(err.status, { error: { code: err.code, message: err.message, requestId }, ...err.extra }, err.headers);
}

function header(event: APIGatewayProxyEventV2, name: string): string | undefined {
  // HTTP API lower-cases header names; local tools do not always.
  const h = event.headers ?? {};
  return h[name] ?? Object.entries(h).find(([k]) => k.toLowerCase() === name)?.[1];
}

/** Same middleware for every route (SPEC F2): a valid Bearer key resolves to exactly one tenant. */
export async function authenticate(event: APIGatewayProxyEventV2, apiKeys: ApiKeyResolver): Promise<string> {
  const auth = header(event, 'authorization');
  const m = auth ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
  if (!m) throw new HttpError(401, 'unauthorized', 'missing or malformed Authorization header; expected "Bearer <api key>"', {}, { 'www-authenticate': 'Bearer' });
  const tenantId = await apiKeys.resolve(m[1]!);
  if (!tenantId) throw new HttpError(401, 'unauthorized', 'invalid API key', {}, { 'www-authenticate': 'Bearer' });
  return tenantId;
}

/** Decodes and size-checks the body, then parses JSON; an empty body is `undefined`. */
export function readJsonBody(event: APIGatewayProxyEventV2, maxBytes: number): unknown {
  const declared = Number(header(event, 'content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    throw new HttpError(413, 'payload_too_large', `request body is ${declared} bytes; the limit is ${maxBytes}`);
  }
  const raw = event.body ? (event.isBase64Encoded ? Buffer.from(event.body, 'base64') : Buffer.from(event.body, 'utf8')) : Buffer.alloc(0);
  if (raw.length > maxBytes) {
    throw new HttpError(413, 'payload_too_large', `request body is ${raw.length} bytes; the limit is ${maxBytes}`);
  }
  if (raw.length === 0) {
    // A declared body that did not arrive as text is not an absent body: serverless-offline hands
    // falsy JSON literals (`null`, `false`, `0`) over pre-parsed, losing the text API Gateway would send.
    if (declared > 0) throw new HttpError(400, 'invalid_request', 'request body must be a JSON object');
    return undefined;
  }
  const type = header(event, 'content-type');
  if (!type || !/^application\/json\s*(;|$)/i.test(type)) {
    throw new HttpError(415, 'unsupported_media_type', `content-type must be application/json (got ${type ? `"${type}"` : 'none'})`);
  }
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new HttpError(400, 'invalid_json', `request body is not valid JSON: ${(err as Error).message}`);
  }
}

function validateParams(params: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(params)) {
    const schema = paramSchemas[name];
    if (!schema) throw new Error(`no schema for path parameter ${name}`);
    const r = schema.safeParse(value);
    if (!r.success) throw invalidRequest(r.error, name);
    out[name] = r.data;
  }
  return out;
}

export async function handleHttpRequest(event: APIGatewayProxyEventV2, deps: ApiDeps, inv: Invocation): Promise<APIGatewayProxyStructuredResultV2> {
  const method = event.requestContext?.http?.method?.toUpperCase() ?? 'GET';
  const path = event.rawPath ?? '/';
  try {
    const tenantId = await authenticate(event, deps.apiKeys);
    const { route, params } = matchRoute(method, path);
    const validParams = validateParams(params);
    const body = method === 'POST' ? readJsonBody(event, deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES) : undefined;
    const result: RouteResult = await route.handle({
      tenantId,
      params: validParams,
      body,
      requestId: inv.requestId,
      ...(inv.remainingTimeMs ? { remainingTimeMs: inv.remainingTimeMs } : {}),
      deps,
    });
    return json(result.status, result.body, result.headers);
  } catch (err) {
    const mapped = fromDomainError(err);
    if (mapped) {
      if (mapped.status >= 500) deps.logger.warn('request failed', { method, path, status: mapped.status, error: String(err) });
      return errorResponse(mapped, inv.requestId);
    }
    // Never leak internals: the log has the details, the client gets a request id.
    deps.logger.error('unhandled error', { method, path, error: err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : String(err) });
    return errorResponse(new HttpError(500, 'internal', 'internal error'), inv.requestId);
  }
}
