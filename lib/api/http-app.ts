// The HTTP API as one function of a plain request: authenticate, route, read the body, run the
// route, map every error to `{error: {code, message}}`. The API Gateway event adapter is
// functions/api-gateway.ts; lib/ knows no AWS event types.
import type { ApiKeyResolver } from './api-keys.js';
import { MAX_BODY_BYTES } from '../lineage/limits.js';
import { errorFields } from '../errors.js';
import { fromDomainError, HttpError, invalidField } from './errors.js';
import { parseJsonBody } from './json-body.js';
import { matchRoute, type RouteDeps, type RouteResult } from './routes.js';
import { attemptIdParam, conversationIdParam, sessionIdParam } from './schemas.js';
import type { LimitKind, TenantLimiter } from './tenant-limits.js';
import { safeParse } from '../validation.js';
import { StoreOutcomeUnknownError, StoreRetryableError } from '../lineage/errors.js';

export const DEFAULT_MAX_BODY_BYTES = MAX_BODY_BYTES;
/**
 * Invocation time kept back to answer in: past the function's timeout the runtime answers an
 * opaque 500 for a request whose write may have landed (a store stall outlasting its retries).
 */
export const ANSWER_MARGIN_MS = 1_000;

export interface ApiDeps extends RouteDeps {
  apiKeys: ApiKeyResolver;
  maxBodyBytes?: number;
  /** Per-tenant request and compression limits (429 rate_limited); unset: none. */
  limits?: TenantLimiter;
}

export interface Invocation {
  requestId: string;
  /** Lambda context.getRemainingTimeInMillis, handed to compaction (SPEC C9). */
  remainingTimeMs?: () => number;
}

/** One HTTP request as the API needs it; header names in any case. */
export interface HttpRequest {
  method: string;
  path: string;
  headers: Record<string, string | undefined>;
  query: Record<string, string | undefined>;
  body: Buffer;
}

export interface HttpResponse {
  statusCode: number;
  headers: Record<string, string>;
  body?: string;
}

const paramSchemas: Record<string, typeof sessionIdParam> = {
  id: sessionIdParam,
  conversationId: conversationIdParam,
  attemptId: attemptIdParam,
  turnId: sessionIdParam,
};

/** Session and conversation compress routes (a conversation's acts on its live session). */
const COMPRESS_SUFFIX = '/compress';
const REQUEST: readonly LimitKind[] = ['request', 'bytes'];
const COMPRESS: readonly LimitKind[] = ['request', 'bytes', 'compress'];

function respond(result: RouteResult, requestId: string): HttpResponse {
  const headers: Record<string, string> = { 'x-request-id': requestId, ...result.headers };
  if (result.text !== undefined) return { statusCode: result.status, headers, body: result.text };
  if (result.body === undefined) return { statusCode: result.status, headers };
  return {
    statusCode: result.status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: JSON.stringify(result.body),
  };
}

function errorResponse(err: HttpError, requestId: string): HttpResponse {
  return respond(
    { status: err.status, body: { error: { code: err.code, message: err.message, requestId }, ...err.details }, headers: err.headers },
    requestId,
  );
}

/** Header names lower-cased (HTTP API already does; local tools do not always). */
function headersOf(req: HttpRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) out[k.toLowerCase()] = v;
  return out;
}

/** Same middleware for every route (SPEC F2): a valid Bearer key resolves to exactly one tenant. */
export async function authenticate(headers: Record<string, string>, apiKeys: ApiKeyResolver): Promise<string> {
  const auth = headers.authorization;
  const m = auth ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
  const challenge = { 'www-authenticate': 'Bearer' };
  if (!m) throw new HttpError(401, 'unauthorized', 'missing or malformed Authorization header; expected "Bearer <api key>"', {}, challenge);
  const tenantId = await apiKeys.resolve(m[1]!);
  if (!tenantId) throw new HttpError(401, 'unauthorized', 'invalid API key', {}, challenge);
  return tenantId;
}

function validateParams(params: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(params)) {
    const schema = paramSchemas[name];
    if (!schema) throw new Error(`no schema for path parameter ${name}`);
    const r = safeParse(schema, value);
    if (!r.success) throw invalidField(name, r.error.issues[0]?.message ?? 'invalid');
    out[name] = r.data;
  }
  return out;
}

export async function handleRequest(req: HttpRequest, deps: ApiDeps, inv: Invocation): Promise<HttpResponse> {
  const { method, path } = req;
  try {
    const headers = headersOf(req);
    const tenantId = await authenticate(headers, deps.apiKeys);
    const { route, params } = matchRoute(method, path);
    const validParams = validateParams(params);
    // Before the body is read: a tenant over its limit costs no parsing (issue 22).
    // A body over the size limit is answered 413 below, not charged to the byte budget.
    const bodyBytes = Math.min(req.body.length, deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
    await deps.limits?.check(tenantId, route.path.endsWith(COMPRESS_SUFFIX) ? COMPRESS : REQUEST, bodyBytes);
    const body =
      method === 'POST' || method === 'PUT' || method === 'PATCH'
        ? parseJsonBody(
            { body: req.body, contentType: headers['content-type'], declaredLength: Number(headers['content-length']) },
            deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
          )
        : undefined;
    const result = await withinInvocation(method, inv, () =>
      route.handle({
        tenantId,
        params: validParams,
        query: Object.fromEntries(Object.entries(req.query).filter((e): e is [string, string] => e[1] !== undefined)),
        body,
        headers,
        requestId: inv.requestId,
        ...(inv.remainingTimeMs ? { remainingTimeMs: inv.remainingTimeMs } : {}),
        deps,
      }),
    );
    return respond(result, inv.requestId);
  } catch (err) {
    const mapped = fromDomainError(err);
    if (mapped) {
      if (mapped.status >= 500) deps.logger.warn('request failed', { method, path, status: mapped.status, error: errorFields(err) });
      return errorResponse(mapped, inv.requestId);
    }
    // Never leak internals: the log has the details, the client gets a request id.
    deps.logger.error('unhandled error', {
      method,
      path,
      error: errorFields(err),
    });
    return errorResponse(new HttpError(500, 'internal', 'internal error'), inv.requestId);
  }
}

/**
 * The route's answer, or, when the invocation is about to time out first, 503: `outcome_unknown`
 * for a write (it may still land: never "nothing applied"), `unavailable` for a read.
 */
async function withinInvocation<T>(method: string, inv: Invocation, work: () => Promise<T>): Promise<T> {
  const remaining = inv.remainingTimeMs;
  if (!remaining) return work();
  const running = work();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        running.catch(() => undefined); // its late end has no one to answer
        reject(
          method === 'GET'
            ? new StoreRetryableError('the request ran out of invocation time')
            : new StoreOutcomeUnknownError('the request ran out of invocation time before the store confirmed it'),
        );
      },
      Math.max(0, remaining() - ANSWER_MARGIN_MS),
    );
  });
  try {
    return await Promise.race([running, late]);
  } finally {
    clearTimeout(timer);
  }
}
