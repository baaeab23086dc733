// Branches (SPEC H2): POST /conversations/{id}/branches copies the conversation's live session's
// items 1..fromSeq into a new conversation whose root records `branchedFrom`; the session-route
// twin branches from one session. Idempotency-Key as on the other routes of each (A3): scoped to
// the source conversation's incarnation (K2), or to the session.
import * as z from 'zod/mini';
import type { IdempotencyInput } from '../lineage/types.js';
import type { SessionRef } from '../session-ref.js';
import { onLive, tipOf, tipsOf } from './conversation-routes.js';
import { idempotencyOf, optional, replayed, type Route, type RouteContext, type RouteResult } from './routes.js';
import { conversationIdParam, parseWith } from './schemas.js';
import { conversationView } from './views.js';

export const branchBody = z.strictObject({
  conversationId: conversationIdParam,
  fromSeq: z.optional(z.number().check(z.int(), z.minimum(1))),
});

/** A new conversation starts with the default policies (T5, E6): a branch copies items, not settings. */
const POLICIES = { turns: 'optional', compaction: 'service' } as const;

async function branchFrom(ctx: RouteContext, from: SessionRef, liveOnly: boolean, idempotency?: IdempotencyInput): Promise<RouteResult> {
  const body = parseWith(branchBody, ctx.body, 'body');
  const r = await ctx.deps.store.branchConversation({
    from,
    conversationId: body.conversationId,
    ...optional('fromSeq', body.fromSeq),
    liveOnly,
    ...optional('idempotency', idempotency),
    respond: (c, s) => ({ status: 201, body: { conversation: conversationView(c, s.messageCount, POLICIES) } }),
  });
  if (r.replayed) return replayed(r.response);
  // P5: this container knows the branch's tip, so its first append adds no read.
  tipsOf(ctx.deps).set(ctx.tenantId, body.conversationId, tipOf(r.conversation));
  return { status: 201, body: { conversation: conversationView(r.conversation, r.session.messageCount, POLICIES) } };
}

export const branchRoutes: readonly Route[] = [
  {
    method: 'POST',
    path: '/conversations/{conversationId}/branches',
    async handle(ctx) {
      const conversationId = ctx.params.conversationId!;
      parseWith(branchBody, ctx.body, 'body');
      const idem = idempotencyOf(ctx);
      const r = await onLive(ctx, async (ref, tip) => ({
        result: await branchFrom(ctx, ref, true, idem && { ...idem, conversation: { conversationId, rootSessionId: tip.rootSessionId } }),
      }));
      return r.result;
    },
  },
  {
    method: 'POST',
    path: '/sessions/{id}/branches',
    async handle(ctx) {
      return branchFrom(ctx, { tenantId: ctx.tenantId, sessionId: ctx.params.id! }, false, idempotencyOf(ctx));
    },
  },
];
