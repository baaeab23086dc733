// Held compaction attempts over HTTP (SPEC E1-E8), in both forms: /sessions/{id}/compactions… on
// one session and /conversations/{conversationId}/compactions… on the conversation's live one.
// The work is lib/compaction/held-attempts.ts; this file parses, checks the replacement like an
// append (A1, A7) and words the answers. The Lease-Token header is a secret: it is read here,
// handed on, and never logged or answered (E8).
import { decodeAttemptId, type BeginAnswer, type HeldAttempts } from '../compaction/held-attempts.js';
import { validateItems, describeProblem } from '../items/validate.js';
import type { Item } from '../items/types.js';
import { ItemTooLargeError } from '../lineage/errors.js';
import { MAX_ITEM_BYTES, MAX_PAGE_BYTES } from '../lineage/limits.js';
import type { SessionRef } from '../session-ref.js';
import { liveSessionOf } from './conversation-routes.js';
import { HttpError, leaseUnavailable } from './errors.js';
import type { Route, RouteContext, RouteResult } from './routes.js';
import { beginCompactionBody, commitCompactionBody, parseWith } from './schemas.js';
import { turnTokenOf } from './turn-routes.js';
import { leadingWithin } from './views.js';

const notFoundAttempt = (): HttpError => new HttpError(404, 'not_found', 'compaction attempt not found');

function heldOf(ctx: RouteContext): HeldAttempts {
  if (!ctx.deps.held) throw new HttpError(404, 'not_found', 'held compaction attempts are not enabled here');
  return ctx.deps.held;
}

function tokenOf(ctx: RouteContext): string {
  const token = ctx.headers['lease-token'];
  if (!token) throw new HttpError(401, 'lease_token_invalid', 'the Lease-Token header (from the begin) is required');
  return token;
}

/** The snapshot as answered: cut like a page (A5) so the answer stays under the payload limit. */
function beginResult(a: BeginAnswer): RouteResult {
  if (a.outcome === 'skipped' && a.reason === 'lease_unavailable') throw leaseUnavailable();
  if (a.outcome !== 'started') return { status: 200, body: a };
  const { items, truncated } = leadingWithin(a.messages, MAX_PAGE_BYTES);
  return {
    status: 201,
    body: { outcome: 'started', attempt: a.attempt, messages: items, truncated, ...(a.attempt.partial ? { partial: true } : {}) },
  };
}

async function beginOn(ctx: RouteContext, ref: SessionRef): Promise<BeginAnswer> {
  const body = parseWith(beginCompactionBody, ctx.body, 'body');
  const { mode, origin, ttlMs, expectedSessionId: sessionId, expectedCount: count, expectedLastSeq: lastSeq } = body;
  return heldOf(ctx).begin(ref, {
    mode,
    origin,
    ...(ttlMs !== undefined ? { ttlMs } : {}),
    // X2: a receipt without a count is no receipt (nothing to check the history by).
    ...(count !== undefined
      ? { expected: { count, ...(sessionId !== undefined ? { sessionId } : {}), ...(lastSeq !== undefined ? { lastSeq } : {}) } }
      : {}),
  });
}

/** E7: the replacement is checked as an append is (A1 shapes, A7 sizes); a refusal changes nothing. */
function replacementOf(ctx: RouteContext, attemptId: string): Item[] {
  const body = parseWith(commitCompactionBody, ctx.body, 'body');
  const key = decodeAttemptId(attemptId);
  if (!key) throw notFoundAttempt();
  const checked = validateItems(key.format, body.messages);
  if (!checked.ok) {
    const field = `messages[${checked.problem.index}]${checked.problem.path ? `.${checked.problem.path}` : ''}`;
    throw new HttpError(400, 'invalid_request', describeProblem(checked.problem), { field });
  }
  checked.items.forEach((item, i) => {
    const bytes = Buffer.byteLength(JSON.stringify(item), 'utf8');
    if (bytes > MAX_ITEM_BYTES) throw new ItemTooLargeError(i, bytes, MAX_ITEM_BYTES);
  });
  return [...checked.items];
}

/** E3: answered as compress answers (warnings always there, as outcomeView words it), plus `replayed` on a repeat. */
function commitResult(answer: Record<string, unknown>): RouteResult {
  if (answer.outcome === 'skipped' && answer.reason === 'lease_unavailable') throw leaseUnavailable();
  const { items, ...given } = answer;
  const rest: Record<string, unknown> = { ...given, warnings: Array.isArray(given.warnings) ? given.warnings : [] };
  if (!Array.isArray(items)) return { status: 200, body: rest.outcome === 'compressed' ? { ...rest, replayed: true } : rest };
  const cut = leadingWithin(items, MAX_PAGE_BYTES);
  return { status: 200, body: { ...rest, messages: cut.items, truncated: cut.truncated } };
}

/**
 * Conversation routes act on the attempt's own session: the id names it, so a rotation since the
 * begin does not move it. The id names its conversation too, so another conversation's attempt is
 * 404 before anything is read or changed (E8), with no DynamoDB call.
 */
function conversationAttemptRef(ctx: RouteContext): SessionRef {
  const key = decodeAttemptId(ctx.params.attemptId!);
  if (!key || key.conversationId !== ctx.params.conversationId) throw notFoundAttempt();
  return { tenantId: ctx.tenantId, sessionId: key.sessionId };
}

/** The operations on one attempt, for a way of finding its session. */
function attemptRoutes(base: string, refOf: (ctx: RouteContext) => SessionRef): Route[] {
  return [
    {
      method: 'GET',
      path: `${base}/{attemptId}`,
      async handle(ctx) {
        const attempt = await heldOf(ctx).status(refOf(ctx), ctx.params.attemptId!);
        return { status: 200, body: { attempt } };
      },
    },
    {
      method: 'POST',
      path: `${base}/{attemptId}/heartbeat`,
      async handle(ctx) {
        const token = tokenOf(ctx);
        const attempt = await heldOf(ctx).heartbeat(refOf(ctx), ctx.params.attemptId!, token);
        return { status: 200, body: { attempt } };
      },
    },
    {
      method: 'POST',
      path: `${base}/{attemptId}/commit`,
      async handle(ctx) {
        const token = tokenOf(ctx);
        const replacement = replacementOf(ctx, ctx.params.attemptId!);
        const turn = turnTokenOf(ctx);
        const answer = await heldOf(ctx).commit(refOf(ctx), ctx.params.attemptId!, token, replacement, {
          correlationId: ctx.requestId,
          ...(turn ? { turn } : {}),
          ...((ctx.body as { verbatim?: unknown }).verbatim === true ? { verbatim: true } : {}),
        });
        return commitResult(answer);
      },
    },
    {
      method: 'DELETE',
      path: `${base}/{attemptId}`,
      async handle(ctx) {
        const token = tokenOf(ctx);
        return { status: 200, body: await heldOf(ctx).abort(refOf(ctx), ctx.params.attemptId!, token) };
      },
    },
  ];
}

/** Session routes take the attempt's session from the path, and refuse an attempt of another session. */
function sessionAttemptRef(ctx: RouteContext): SessionRef {
  const key = decodeAttemptId(ctx.params.attemptId!);
  if (!key || key.sessionId !== ctx.params.id) throw notFoundAttempt();
  return { tenantId: ctx.tenantId, sessionId: key.sessionId };
}

export const compactionRoutes: readonly Route[] = [
  {
    method: 'POST',
    path: '/sessions/{id}/compactions',
    async handle(ctx) {
      return beginResult(await beginOn(ctx, { tenantId: ctx.tenantId, sessionId: ctx.params.id! }));
    },
  },
  ...attemptRoutes('/sessions/{id}/compactions', sessionAttemptRef),
  {
    method: 'POST',
    path: '/conversations/{conversationId}/compactions',
    async handle(ctx) {
      const ref = await liveSessionOf(ctx);
      const a = await beginOn(ctx, ref);
      // K2: a tip this container only remembered had rotated: begin again on the live one, read afresh.
      if (a.outcome === 'skipped' && a.reason === 'adopted' && a.sessionId !== ref.sessionId)
        return beginResult(await beginOn(ctx, await liveSessionOf(ctx, true)));
      return beginResult(a);
    },
  },
  ...attemptRoutes('/conversations/{conversationId}/compactions', conversationAttemptRef),
];
