// The route table: one entry per API operation. functions/openapi.json documents exactly
// these (checked by test/unit/api/openapi.test.ts), and serverless.yml declares them.
import type { z } from 'zod';
import type { CompactionOrigin, CompactionOutcome, CompactRequest } from '../compaction/types.js';
import type { LineageStore } from '../lineage/types.js';
import type { SessionRef } from '../session-ref.js';
import { HttpError, invalidRequest, notFound, RETRY_AFTER_SECONDS } from './errors.js';
import { appendMessagesBody, compressBody, createSessionBody } from './schemas.js';
import { isRetryableOutcome, outcomeView, sessionView } from './views.js';

export interface ApiLogger {
  info(message: string, ...extra: unknown[]): void;
  warn(message: string, ...extra: unknown[]): void;
  error(message: string, ...extra: unknown[]): void;
}

/** Structurally the after-turn publisher of lib/after-turn/publisher.ts. */
export interface TurnEventPublisher {
  publish(e: { tenantId: string; sessionId: string; origin: CompactionOrigin }): Promise<void>;
}

export interface RouteDeps {
  store: LineageStore;
  compact(req: CompactRequest): Promise<CompactionOutcome>;
  publisher: TurnEventPublisher;
  logger: ApiLogger;
}

export interface RouteContext {
  tenantId: string;
  /** Validated path parameters. */
  params: Record<string, string>;
  /** Parsed JSON body (undefined for GET or an empty POST). */
  body: unknown;
  requestId: string;
  remainingTimeMs?: () => number;
  deps: RouteDeps;
}

export interface RouteResult {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export type HttpMethod = 'GET' | 'POST';

export interface Route {
  method: HttpMethod;
  /** API Gateway route syntax: /sessions/{id}. */
  path: string;
  handle(ctx: RouteContext): Promise<RouteResult>;
}

/** An absent body means `{}`; anything sent, including a JSON `null`, must match the schema. */
function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const r = schema.safeParse(body === undefined ? {} : body);
  if (!r.success) throw invalidRequest(r.error, 'body');
  return r.data;
}

function refOf(ctx: RouteContext): SessionRef {
  return { tenantId: ctx.tenantId, sessionId: ctx.params.id! };
}

/** Reads the caller's own session or answers 404 (also for other tenants' sessions: SPEC F2). */
async function requireSession(ctx: RouteContext) {
  const ref = refOf(ctx);
  const session = await ctx.deps.store.getSession(ref);
  if (!session) throw notFound(ref.sessionId);
  return { ref, session };
}

export const routes: readonly Route[] = [
  {
    method: 'POST',
    path: '/sessions',
    async handle(ctx) {
      const body = parseBody(createSessionBody, ctx.body);
      const session = await ctx.deps.store.createSession({ tenantId: ctx.tenantId, ...body });
      return { status: 201, body: { session: sessionView(session) } };
    },
  },
  {
    method: 'GET',
    path: '/sessions/{id}',
    async handle(ctx) {
      const { session } = await requireSession(ctx);
      return { status: 200, body: { session: sessionView(session) } };
    },
  },
  {
    method: 'POST',
    path: '/sessions/{id}/messages',
    async handle(ctx) {
      const body = parseBody(appendMessagesBody, ctx.body);
      const ref = refOf(ctx);
      const { session, appended } = await ctx.deps.store.appendMessages(ref, body.messages);
      try {
        await ctx.deps.publisher.publish({ tenantId: ref.tenantId, sessionId: ref.sessionId, origin: 'turn' });
      } catch (err) {
        // The append is durable; a lost after-turn event only delays compaction (the next turn retries).
        ctx.deps.logger.warn('after-turn publish failed', { sessionId: ref.sessionId, error: String(err) });
      }
      return { status: 200, body: { session: sessionView(session), appended } };
    },
  },
  {
    method: 'GET',
    path: '/sessions/{id}/messages',
    async handle(ctx) {
      const { ref } = await requireSession(ctx);
      return { status: 200, body: { messages: await ctx.deps.store.readMessages(ref) } };
    },
  },
  {
    method: 'GET',
    path: '/sessions/{id}/lineage',
    async handle(ctx) {
      const { ref } = await requireSession(ctx);
      const chain = await ctx.deps.store.lineage(ref);
      const tip = chain.at(-1);
      if (!tip) throw notFound(ref.sessionId);
      return { status: 200, body: { chain: chain.map(sessionView), tip: tip.sessionId } };
    },
  },
  {
    method: 'POST',
    path: '/sessions/{id}/compress',
    async handle(ctx) {
      const body = parseBody(compressBody, ctx.body);
      const { ref } = await requireSession(ctx);
      const outcome = await ctx.deps.compact({
        ref,
        mode: body.mode,
        origin: body.origin,
        holder: `http:${ctx.requestId}`,
        ...(body.keepLast !== undefined ? { keepLast: body.keepLast } : {}),
        ...(ctx.remainingTimeMs ? { remainingTimeMs: ctx.remainingTimeMs } : {}),
      });
      if (isRetryableOutcome(outcome)) {
        return { status: 503, body: outcomeView(outcome), headers: { 'retry-after': String(RETRY_AFTER_SECONDS) } };
      }
      return { status: 200, body: outcomeView(outcome) };
    },
  },
];

interface Compiled {
  route: Route;
  regex: RegExp;
  names: string[];
}

const compiled: Compiled[] = routes.map((route) => {
  const names: string[] = [];
  const source = route.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { route, regex: new RegExp(`^${source}/?$`), names };
});

/** Malformed escapes stay as they are; the parameter pattern then rejects them with a 400. */
function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export type RouteMatch = { route: Route; params: Record<string, string> };

/** Finds the route for a request: 404 for an unknown path, 405 (with Allow) for a known path with another method. */
export function matchRoute(method: string, path: string): RouteMatch {
  const allowed: string[] = [];
  for (const c of compiled) {
    const m = c.regex.exec(path);
    if (!m) continue;
    if (c.route.method !== method) {
      allowed.push(c.route.method);
      continue;
    }
    const params: Record<string, string> = {};
    c.names.forEach((n, i) => {
      params[n] = safeDecode(m[i + 1]!);
    });
    return { route: c.route, params };
  }
  if (allowed.length) {
    throw new HttpError(405, 'method_not_allowed', `${method} is not allowed on ${path}`, {}, { allow: allowed.join(', ') });
  }
  throw new HttpError(404, 'not_found', `no route for ${method} ${path}`);
}
