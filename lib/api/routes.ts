// The route table: one entry per API operation. functions/openapi.json documents exactly
// these (checked by test/unit/api/openapi.test.ts), and serverless.yml declares them.
import { errorFields } from '../errors.js';
import type { HeldAttempts } from '../compaction/held-attempts.js';
import type { CompactionOrigin, CompactionOutcome, CompactRequest } from '../compaction/types.js';
import { validateItems, describeProblem } from '../items/validate.js';
import { decodeCursor, encodeCursor } from '../lineage/cursor.js';
import { MAX_PAGE_BYTES } from '../lineage/limits.js';
import { withEstimates } from '../lineage/prepare.js';
import type { ConversationScope, IdempotencyInput, LineageStore, PagePosition, SessionRecord, StoredResponse } from '../lineage/types.js';
import type { Logger } from '../logger.js';
import type { SessionRef } from '../session-ref.js';
import { requestDigest } from '../items/canonical-json.js';
import { compactionRoutes } from './compaction-routes.js';
import { conversationRoutes } from './conversation-routes.js';
import { historyRoutes } from './history-routes.js';
import { turnRoutes, turnTokenOf } from './turn-routes.js';
import { HttpError, invalidField, leaseUnavailable, notFound } from './errors.js';
import type { LiveTips } from './live-tips.js';
import { appendBody, assertMetadata, compressBody, createSessionBody, DEFAULT_LIMIT, listMessagesQuery, parseWith } from './schemas.js';
import { transactionRoutes } from './transaction-routes.js';
import { branchRoutes } from './branch-routes.js';
import { lineageEntryView, outcomeView, sessionView } from './views.js';

/** Structurally the after-turn publisher of lib/after-turn/publisher.ts. */
export interface TurnEventPublisher {
  publish(e: {
    tenantId: string;
    sessionId: string;
    conversationId?: string;
    origin: CompactionOrigin;
    correlationId?: string;
  }): Promise<void>;
}

export interface RouteDeps {
  store: LineageStore;
  compact(req: CompactRequest): Promise<CompactionOutcome>;
  publisher: TurnEventPublisher;
  logger: Logger;
  /** After-turn events are published only once a session's token estimate passes this (F3); unset: always. */
  publishAboveTokens?: number;
  /** Held compaction attempts (SPEC E1-E8): the agent's own engine under the service's lease and fence. */
  held?: HeldAttempts;
  /** The container's known conversation tips (P5); one per deps object when absent. */
  liveTips?: LiveTips;
}

export interface RouteContext {
  tenantId: string;
  /** Validated path parameters. */
  params: Record<string, string>;
  /** Query string parameters (GET). */
  query: Record<string, string>;
  /** Parsed JSON body (undefined for GET or an empty body). */
  body: unknown;
  /** Request headers, lower-cased names. */
  headers: Record<string, string>;
  requestId: string;
  remainingTimeMs?: () => number;
  deps: RouteDeps;
}

export interface RouteResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** A body sent as it is (H5's NDJSON), its content-type in `headers`; `body` is then ignored. */
  text?: string;
}

export type HttpMethod = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';

export interface Route {
  method: HttpMethod;
  /** API Gateway route syntax: /sessions/{id}. */
  path: string;
  handle(ctx: RouteContext): Promise<RouteResult>;
}

/** Idempotency-Key: 1-255 printable ASCII characters (A3). */
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

function refOf(ctx: RouteContext): SessionRef {
  return { tenantId: ctx.tenantId, sessionId: ctx.params.id! };
}

export function idempotencyOf(ctx: RouteContext): IdempotencyInput | undefined {
  const key = ctx.headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(key)) throw invalidField('Idempotency-Key', 'must be 1-255 printable ASCII characters');
  return { key, requestHash: requestDigest(ctx.body) };
}

export function replayed(response: StoredResponse): RouteResult {
  return { status: response.status, body: response.body, headers: { 'idempotent-replayed': 'true' } };
}

export const routes: readonly Route[] = [
  {
    method: 'POST',
    path: '/sessions',
    async handle(ctx) {
      const body = parseWith(createSessionBody, ctx.body, 'body');
      if (body.metadata) assertMetadata(body.metadata);
      const r = await ctx.deps.store.createSession({
        tenantId: ctx.tenantId,
        format: body.format,
        ...(body.source !== undefined ? { source: body.source } : {}),
        ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
        ...optional('idempotency', idempotencyOf(ctx)),
        respond: (s) => ({ status: 201, body: { session: sessionView(s) } }),
      });
      return r.replayed ? replayed(r.response) : { status: 201, body: { session: sessionView(r.session) } };
    },
  },
  {
    method: 'GET',
    path: '/sessions/{id}',
    async handle(ctx) {
      const session = await ctx.deps.store.getSession(refOf(ctx));
      if (!session) throw notFound(ctx.params.id!);
      return { status: 200, body: { session: sessionView(session) } };
    },
  },
  {
    method: 'DELETE',
    path: '/sessions/{id}',
    async handle(ctx) {
      await ctx.deps.store.deleteSession(refOf(ctx));
      return { status: 204 };
    },
  },
  {
    method: 'POST',
    path: '/sessions/{id}/messages',
    async handle(ctx) {
      return (await appendTo(ctx, refOf(ctx))).result;
    },
  },
  {
    method: 'GET',
    path: '/sessions/{id}/messages',
    async handle(ctx) {
      return (await readMessages(ctx, refOf(ctx))).result;
    },
  },
  {
    method: 'DELETE',
    path: '/sessions/{id}/messages/last',
    async handle(ctx) {
      return (await popFrom(ctx, refOf(ctx))).result;
    },
  },
  {
    method: 'GET',
    path: '/sessions/{id}/lineage',
    async handle(ctx) {
      return (await lineageOf(ctx, refOf(ctx))).result;
    },
  },
  {
    method: 'POST',
    path: '/sessions/{id}/compress',
    async handle(ctx) {
      return (await compressOn(ctx, refOf(ctx))).result;
    },
  },
  ...conversationRoutes,
  ...historyRoutes,
  ...compactionRoutes,
  ...transactionRoutes,
  ...turnRoutes,
  ...branchRoutes,
];

/** What a session operation answered, and the session it acted on as the answer shows it. */
export interface Acted {
  result: RouteResult;
  session?: SessionRecord;
}

/** POST .../messages on `ref` (A1, A3, A4); `scope` puts the Idempotency-Key under a conversation (K2). */
export async function appendTo(ctx: RouteContext, ref: SessionRef, scope?: ConversationScope): Promise<Acted> {
  const body = parseWith(appendBody, ctx.body, 'body');
  const idempotency = idempotencyOf(ctx);
  const r = await ctx.deps.store.appendItems(ref, {
    // A1: what a valid item is depends on the session's format, known once the store read it.
    prepare: (session) => {
      const checked = validateItems(session.format, body.messages);
      if (!checked.ok) {
        const field = `messages[${checked.problem.index}]${checked.problem.path ? `.${checked.problem.path}` : ''}`;
        throw new HttpError(400, 'invalid_request', describeProblem(checked.problem), { field });
      }
      return withEstimates(checked.items, session);
    },
    ...optional('expectedCount', body.expectedCount),
    ...optional('idempotency', idempotency && scope ? { ...idempotency, conversation: scope } : idempotency),
    respond: (s, appended) => ({ status: 200, body: { session: sessionView(s), appended } }),
    ...optional('turn', turnTokenOf(ctx)),
  });
  if (r.replayed) return { result: replayed(r.response) };
  await publishTurn(ctx, r.session);
  return { result: { status: 200, body: { session: sessionView(r.session), appended: r.appended } }, session: r.session };
}

/** GET .../messages on `ref` (A5); `cursorOf` decodes a cursor for it (conversations tell a rotated one apart). */
export async function readMessages(
  ctx: RouteContext,
  ref: SessionRef,
  cursorOf: (cursor: string) => PagePosition = (c) => decodeCursor(ref.tenantId, ref.sessionId, c),
): Promise<Acted> {
  const q = parseWith(listMessagesQuery, ctx.query, 'query');
  if (q.tail !== undefined) {
    if (q.cursor !== undefined || q.limit !== undefined) throw invalidField('tail', 'cannot be combined with cursor or limit');
    const { items, truncated, session } = await ctx.deps.store.readTail(ref, q.tail, MAX_PAGE_BYTES);
    return { result: { status: 200, body: { messages: items, nextCursor: null, truncated, session: sessionView(session) } }, session };
  }
  const from = q.cursor === undefined ? undefined : cursorOf(q.cursor);
  const page = await ctx.deps.store.readPage(ref, {
    limit: q.limit ?? DEFAULT_LIMIT,
    maxBytes: MAX_PAGE_BYTES,
    ...optional('from', from),
  });
  return {
    result: {
      status: 200,
      body: {
        messages: page.items,
        nextCursor: page.next ? encodeCursor(ref.tenantId, ref.sessionId, page.next) : null,
        truncated: false,
        session: sessionView(page.session),
      },
    },
    session: page.session,
  };
}

/** DELETE .../messages/last on `ref` (A6). */
export async function popFrom(ctx: RouteContext, ref: SessionRef): Promise<Acted> {
  const { removed, session } = await ctx.deps.store.popLast(ref, turnTokenOf(ctx));
  return { result: { status: 200, body: { removed, session: sessionView(session) } }, session };
}

/** GET .../lineage from `ref`: the whole chain, and its live tip. */
export async function lineageOf(ctx: RouteContext, ref: SessionRef): Promise<Acted> {
  const chain = await ctx.deps.store.lineage(ref);
  const last = chain.at(-1);
  if (!last) throw notFound(ref.sessionId);
  // The live tip; a deleted last session leaves the conversation without one.
  // H2: a branch's edge, also at the top (it is on its root, the chain's first entry).
  const edge = chain[0]?.branchedFrom;
  return {
    result: {
      status: 200,
      body: {
        chain: chain.map(lineageEntryView),
        tip: last.deletedAt ? null : last.sessionId,
        ...(edge ? { branchedFrom: { ...edge } } : {}),
      },
    },
    session: last,
  };
}

/** POST .../compress on `ref`; the outcome names the live session after it. */
export async function compressOn(ctx: RouteContext, ref: SessionRef): Promise<{ result: RouteResult; outcome: CompactionOutcome }> {
  const body = parseWith(compressBody, ctx.body, 'body');
  // P2: no session read first; the lease decides, and the attempt's first write finds an unknown session (404).
  const outcome = await ctx.deps.compact({
    ref,
    mode: body.mode,
    origin: body.origin,
    holder: `http:${ctx.requestId}`,
    correlationId: ctx.requestId,
    ...optional('keepLast', body.keepLast),
    ...optional('remainingTimeMs', ctx.remainingTimeMs),
    ...(body.force ? { force: true } : {}),
  });
  if (outcome.outcome === 'skipped' && outcome.reason === 'lease_unavailable') throw leaseUnavailable();
  if (outcome.outcome === 'disabled' && outcome.reason === 'agent_engine') throw agentEngine(outcome.sessionId);
  return { result: { status: 200, body: outcomeView(outcome) }, outcome };
}

/** E6: the conversation compacts with the agent's own engine; a server compress must say it means it. */
function agentEngine(sessionId: string): HttpError {
  return new HttpError(
    409,
    'agent_engine',
    `session ${sessionId} is compacted by the agent's own engine (the conversation's compaction policy is agent): ` +
      'use a held attempt (POST .../compactions), or send force: true to compact with the service engine',
  );
}

export async function publishTurn(ctx: RouteContext, session: SessionRecord): Promise<void> {
  const threshold = ctx.deps.publishAboveTokens;
  if (threshold !== undefined && session.tokenEstimate <= threshold) return;
  try {
    await ctx.deps.publisher.publish({
      tenantId: session.tenantId,
      sessionId: session.sessionId,
      ...optional('conversationId', session.conversationId),
      origin: 'turn',
      correlationId: ctx.requestId,
    });
  } catch (err) {
    // The append is durable; a lost after-turn event only delays compaction (the next turn retries).
    ctx.deps.logger.warn('after-turn publish failed', { sessionId: session.sessionId, error: errorFields(err) });
  }
}

/** `{[name]: value}` when the value is present, else nothing (exactOptionalPropertyTypes-friendly spreads). */
export function optional<K extends string, V>(name: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: V };
}

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
