// The conversation routes (SPEC K1-K3, P5): one stable, client-chosen id for a whole chain. The
// messages, pop, compress and lineage routes act on the conversation's live session with the
// session routes' own code (routes.ts); this file only finds that session (the container's known
// tip, else one read of the conversation record) and follows it when a rotation moved it.
import { InvalidCursorError, decodeCursor, isIssuedCursor } from '../lineage/cursor.js';
import {
  ConversationNotFoundError,
  RotationLostError,
  SessionEndedError,
  SessionNotFoundError,
  CursorStaleError,
  StoreRetryableError,
} from '../lineage/errors.js';
import type { Retention } from '../lineage/history.js';
import type { CompactionPolicy, ConversationRecord, SessionRecord, TurnPolicy } from '../lineage/types.js';
import type { SessionRef } from '../session-ref.js';
import { HttpError, invalidField } from './errors.js';
import { LiveTips, type KnownTip } from './live-tips.js';
import {
  appendTo,
  compressOn,
  lineageOf,
  popFrom,
  readMessages,
  type Acted,
  type Route,
  type RouteContext,
  type RouteDeps,
} from './routes.js';
import { assertMetadata, listConversationsQuery, parseWith, patchConversationBody, putConversationBody } from './schemas.js';
import { conversationView, policiesOf } from './views.js';

/** Tip moves one request follows before it answers 503 (each is a rotation landing during the request). */
const MAX_HOPS = 6;
/** How stale the listing's activity mark may get before an append through a conversation refreshes it. */
export const ACTIVITY_MARK_MS = 60_000;

const tipsByDeps = new WeakMap<RouteDeps, LiveTips>();

export function tipsOf(deps: RouteDeps): LiveTips {
  if (deps.liveTips) return deps.liveTips;
  let tips = tipsByDeps.get(deps);
  if (!tips) tipsByDeps.set(deps, (tips = new LiveTips()));
  return tips;
}

export function conversationNotFound(conversationId: string): HttpError {
  // The same answer for unknown, deleted and other tenants' conversations (K3, F2).
  // The hint (issue 34): conversations are created by PUT, never by a first append.
  return new HttpError(404, 'not_found', `conversation ${conversationId} not found; PUT /conversations/${conversationId} creates it`);
}

function convIdOf(ctx: RouteContext): string {
  return ctx.params.conversationId!;
}

export function tipOf(c: ConversationRecord): KnownTip {
  return { liveSessionId: c.liveSessionId, rootSessionId: c.rootSessionId, activeAtMs: Date.parse(c.activeAt), readAtMs: Date.now() };
}

/** Reads the conversation record (the one extra call of a container that does not know the tip). */
async function readTip(ctx: RouteContext): Promise<KnownTip> {
  const conv = await ctx.deps.store.getConversation(ctx.tenantId, convIdOf(ctx));
  if (!conv) throw conversationNotFound(convIdOf(ctx));
  const tip = tipOf(conv);
  tipsOf(ctx.deps).set(ctx.tenantId, convIdOf(ctx), tip);
  return tip;
}

/** The conversation's live session as this container knows it (else one read of the record): the held begin acts on it. */
export async function liveSessionOf(ctx: RouteContext, fresh = false): Promise<SessionRef> {
  const tip = (!fresh && tipsOf(ctx.deps).get(ctx.tenantId, convIdOf(ctx))) || (await readTip(ctx));
  return { tenantId: ctx.tenantId, sessionId: tip.liveSessionId };
}

function isEnded(s: SessionRecord | undefined): boolean {
  return s !== undefined && (s.endedAt !== undefined || s.childSessionId !== undefined);
}

/**
 * Runs `op` on the conversation's live session (K2). A known tip that turns out ended moves to
 * the live one the store names (writes are refused on an ended session, so nothing lands on it);
 * a read that shows its session ended, or a session gone, re-reads the record. An op that answered
 * from a stale tip is never returned: it goes again on the live one.
 */
export async function onLive<T extends Acted>(
  ctx: RouteContext,
  op: (ref: SessionRef, tip: KnownTip, fresh: boolean) => Promise<T>,
  shows: (r: T) => SessionRecord | undefined = (r) => r.session,
): Promise<T & { tip: KnownTip }> {
  const tips = tipsOf(ctx.deps);
  const id = convIdOf(ctx);
  let tip = tips.get(ctx.tenantId, id);
  let fresh = false;
  for (let hop = 0; hop < MAX_HOPS; hop++) {
    if (!tip) {
      tip = await readTip(ctx);
      fresh = true;
    }
    const current = tip;
    const ref = { tenantId: ctx.tenantId, sessionId: current.liveSessionId };
    try {
      const r = await op(ref, current, fresh);
      if (!isEnded(shows(r))) {
        const live = shows(r)?.sessionId ?? current.liveSessionId;
        const known = { ...current, liveSessionId: live };
        tips.set(ctx.tenantId, id, known);
        return { ...r, tip: known };
      }
      // Read from a session a rotation ended: read the record again and go again on its tip.
      tip = undefined;
    } catch (err) {
      if ((err instanceof SessionEndedError || err instanceof RotationLostError) && err.liveSessionId) {
        tip = { ...current, liveSessionId: err.liveSessionId };
        tips.set(ctx.tenantId, id, tip);
        fresh = false;
        continue;
      }
      if (err instanceof SessionNotFoundError || err instanceof SessionEndedError || err instanceof RotationLostError) {
        tips.forget(ctx.tenantId, id);
        // The record itself names a session that is gone: the conversation is being (or was) deleted.
        if (fresh) throw conversationNotFound(id);
        tip = undefined;
        continue;
      }
      throw err;
    }
  }
  throw new StoreRetryableError(`conversation ${id}: its live session kept moving`);
}

/** A cursor issued for another session of the chain (before a rotation) is stale, not foreign. */
function conversationCursor(ref: SessionRef) {
  return (cursor: string) => {
    try {
      return decodeCursor(ref.tenantId, ref.sessionId, cursor);
    } catch (err) {
      if (err instanceof InvalidCursorError && isIssuedCursor(cursor)) throw new CursorStaleError(ref.sessionId);
      throw err;
    }
  };
}

/** The conversation as GET shows it: its record and its live session's count, the tip re-read if the record moved it. */
async function describe(ctx: RouteContext, conv: ConversationRecord, live?: SessionRecord | null) {
  let session = live && live.sessionId === conv.liveSessionId ? live : await ctx.deps.store.getSession(tipRefOf(ctx, conv));
  if (!session) throw conversationNotFound(conv.conversationId);
  if (isEnded(session)) session = null;
  tipsOf(ctx.deps).set(ctx.tenantId, conv.conversationId, tipOf(conv));
  return conversationView(conv, session?.messageCount ?? 0, session ? policiesOf(session) : undefined);
}

function tipRefOf(ctx: RouteContext, conv: ConversationRecord): SessionRef {
  return { tenantId: ctx.tenantId, sessionId: conv.liveSessionId };
}

/** The record, and when the tip is known here the live session beside it (one step, P5). */
async function readWithLive(ctx: RouteContext): Promise<{ conv: ConversationRecord; live?: SessionRecord | null }> {
  const id = convIdOf(ctx);
  const known = tipsOf(ctx.deps).get(ctx.tenantId, id);
  const [conv, live] = await Promise.all([
    ctx.deps.store.getConversation(ctx.tenantId, id),
    known ? ctx.deps.store.getSession({ tenantId: ctx.tenantId, sessionId: known.liveSessionId }) : Promise.resolve(undefined),
  ]);
  if (!conv) {
    tipsOf(ctx.deps).forget(ctx.tenantId, id);
    throw conversationNotFound(id);
  }
  return { conv, ...(live !== undefined ? { live } : {}) };
}

/**
 * T5 and E6: the policies live on the live session's record, so the writes (T5) and the begins of
 * a service compaction (E6) check them in their own condition, with no read of their own.
 */
async function setPolicies(
  ctx: RouteContext,
  p: { turns?: TurnPolicy | undefined; compaction?: CompactionPolicy | undefined },
): Promise<void> {
  if (p.turns === undefined && p.compaction === undefined) return;
  const { turns, compaction } = p;
  await onLive(ctx, async (ref) => {
    await Promise.all([
      turns !== undefined ? ctx.deps.store.setTurnPolicy(ref, turns) : undefined,
      compaction !== undefined ? ctx.deps.store.setCompactionPolicy(ref, compaction) : undefined,
    ]);
    return { result: { status: 204 } };
  });
}

type RetentionBody = { archivedSeconds?: number | undefined; endedSessionSeconds?: number | undefined } | undefined;

/** The fields given (undefined when none). */
function retentionIn(r: RetentionBody): Retention | undefined {
  if (r === undefined) return undefined;
  const retention = {
    ...(r.archivedSeconds !== undefined ? { archivedSeconds: r.archivedSeconds } : {}),
    ...(r.endedSessionSeconds !== undefined ? { endedSessionSeconds: r.endedSessionSeconds } : {}),
  };
  return Object.keys(retention).length === 0 ? undefined : retention;
}

/** H3: a retention over the tenant's limit refuses the whole PUT/PATCH before anything is created or set (400 retention_over_tenant_limit). */
async function checkRetention(ctx: RouteContext, r: RetentionBody): Promise<void> {
  const retention = retentionIn(r);
  if (retention) await ctx.deps.store.checkRetention(ctx.tenantId, retention);
}

/** H3: the conversation's own retention (400 retention_over_tenant_limit above the tenant's); the record after. */
async function setRetention(ctx: RouteContext, r: RetentionBody): Promise<ConversationRecord | undefined> {
  const retention = retentionIn(r);
  if (retention === undefined) return undefined;
  return withConversationErrors(ctx, () => ctx.deps.store.setConversationRetention(ctx.tenantId, convIdOf(ctx), retention));
}

export function withConversationErrors<T>(ctx: RouteContext, work: () => Promise<T>): Promise<T> {
  return work().catch((err: unknown) => {
    if (err instanceof ConversationNotFoundError) {
      tipsOf(ctx.deps).forget(ctx.tenantId, convIdOf(ctx));
      throw conversationNotFound(err.conversationId);
    }
    throw err;
  });
}

export const conversationRoutes: readonly Route[] = [
  {
    method: 'PUT',
    path: '/conversations/{conversationId}',
    async handle(ctx) {
      const body = parseWith(putConversationBody, ctx.body, 'body');
      if (body.metadata) assertMetadata(body.metadata);
      await checkRetention(ctx, body.retention);
      for (let round = 0; ; round++) {
        const r = await ctx.deps.store.ensureConversation(
          {
            tenantId: ctx.tenantId,
            conversationId: convIdOf(ctx),
            ...(body.format !== undefined ? { format: body.format } : {}),
            ...(body.source !== undefined ? { source: body.source } : {}),
            ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
          },
          body.format !== undefined,
        );
        if (r.created) tipsOf(ctx.deps).set(ctx.tenantId, convIdOf(ctx), tipOf(r.conversation));
        await setPolicies(ctx, body);
        const conversation = (await setRetention(ctx, body.retention)) ?? r.conversation;
        if (r.created) {
          const policies = { turns: body.turns ?? 'optional', compaction: body.compaction ?? 'service' } as const;
          return { status: 201, body: { conversation: conversationView(conversation, 0, policies) } };
        }
        try {
          return { status: 200, body: { conversation: await describe(ctx, conversation) } };
        } catch (err) {
          // A DELETE took the conversation between our reads: a PUT never answers 404, it creates it again.
          if (!(err instanceof HttpError && err.status === 404) || round >= 3) throw err;
        }
      }
    },
  },
  {
    method: 'GET',
    path: '/conversations/{conversationId}',
    async handle(ctx) {
      const { conv, live } = await readWithLive(ctx);
      return { status: 200, body: { conversation: await describe(ctx, conv, live) } };
    },
  },
  {
    method: 'PATCH',
    path: '/conversations/{conversationId}',
    async handle(ctx) {
      const body = parseWith(patchConversationBody, ctx.body, 'body');
      if (body.metadata === undefined && body.turns === undefined && body.compaction === undefined && body.retention === undefined)
        throw invalidField('body', 'give metadata, turns, compaction, retention or several');
      if (body.metadata !== undefined) assertMetadata(body.metadata);
      const id = convIdOf(ctx);
      await checkRetention(ctx, body.retention);
      await setPolicies(ctx, body);
      await setRetention(ctx, body.retention);
      if (body.metadata === undefined) {
        const { conv, live } = await readWithLive(ctx);
        return { status: 200, body: { conversation: await describe(ctx, conv, live) } };
      }
      const metadata = body.metadata;
      const known = tipsOf(ctx.deps).get(ctx.tenantId, id);
      const [conv, live] = await withConversationErrors(ctx, () =>
        Promise.all([
          ctx.deps.store.updateConversationMetadata(ctx.tenantId, id, metadata),
          known ? ctx.deps.store.getSession({ tenantId: ctx.tenantId, sessionId: known.liveSessionId }) : Promise.resolve(undefined),
        ]),
      );
      return { status: 200, body: { conversation: await describe(ctx, conv, live) } };
    },
  },
  {
    method: 'DELETE',
    path: '/conversations/{conversationId}',
    async handle(ctx) {
      await withConversationErrors(ctx, () => ctx.deps.store.deleteConversation(ctx.tenantId, convIdOf(ctx)));
      tipsOf(ctx.deps).forget(ctx.tenantId, convIdOf(ctx));
      return { status: 204 };
    },
  },
  {
    method: 'GET',
    path: '/conversations',
    async handle(ctx) {
      const q = parseWith(listConversationsQuery, ctx.query, 'query');
      const page = await ctx.deps.store.listConversations(ctx.tenantId, q.limit ?? 20, q.cursor);
      return {
        status: 200,
        body: { conversations: page.conversations.map((c) => conversationView(c, c.messageCount ?? 0)), nextCursor: page.next },
      };
    },
  },
  {
    method: 'POST',
    path: '/conversations/{conversationId}/messages',
    async handle(ctx) {
      const id = convIdOf(ctx);
      return (
        await onLive(ctx, async (ref, tip) => {
          // The listing's activity mark, refreshed beside the append (never after it) when it is old.
          const stale = Date.now() - tip.activeAtMs > ACTIVITY_MARK_MS;
          const [acted] = await Promise.all([
            appendTo(ctx, ref, { conversationId: id, rootSessionId: tip.rootSessionId }),
            stale ? ctx.deps.store.touchConversation(ctx.tenantId, id) : undefined,
          ]);
          if (stale) tipsOf(ctx.deps).set(ctx.tenantId, id, { ...tip, activeAtMs: Date.now() });
          return acted;
        })
      ).result;
    },
  },
  {
    method: 'GET',
    path: '/conversations/{conversationId}/messages',
    async handle(ctx) {
      return (await onLive(ctx, (ref) => readMessages(ctx, ref, conversationCursor(ref)))).result;
    },
  },
  {
    method: 'DELETE',
    path: '/conversations/{conversationId}/messages/last',
    async handle(ctx) {
      return (await onLive(ctx, (ref) => popFrom(ctx, ref))).result;
    },
  },
  {
    method: 'GET',
    path: '/conversations/{conversationId}/lineage',
    async handle(ctx) {
      // A chain read from any of its sessions ends at the live tip: a stale tip costs nothing here.
      return (await onLive(ctx, (ref) => lineageOf(ctx, ref))).result;
    },
  },
  {
    method: 'POST',
    path: '/conversations/{conversationId}/compress',
    async handle(ctx) {
      const r = await onLive(
        ctx,
        async (ref, _tip, fresh) => {
          const acted = await compressOn(ctx, ref);
          const o = acted.outcome;
          // Adopted: the session had already rotated. From a tip this container only remembered, that
          // is a stale tip, not an answer: go again on the live one. From the record, it is the answer
          // (another compaction just rotated the conversation) and names the live session.
          const staleTip = !fresh && o.outcome === 'skipped' && o.reason === 'adopted' && o.sessionId !== ref.sessionId;
          if (staleTip) throw new SessionEndedError(ref.sessionId, o.sessionId);
          return { result: acted.result, liveSessionId: o.sessionId };
        },
        () => undefined,
      );
      tipsOf(ctx.deps).set(ctx.tenantId, convIdOf(ctx), { ...r.tip, liveSessionId: r.liveSessionId });
      return r.result;
    },
  },
];
