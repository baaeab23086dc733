// H1 and H5: a conversation's whole history, paged (GET .../history, and the session twin), and
// its export as JSON Lines (GET .../export). docs/history.md describes both.
import { decodeHistoryCursor, encodeHistoryCursor, type HistoryEntry } from '../lineage/history.js';
import { MAX_PAGE_BYTES } from '../lineage/limits.js';
import { withConversationErrors } from './conversation-routes.js';
import { exportPage } from './export.js';
import { readImport } from './import.js';
import { idempotencyOf, replayed, type Route, type RouteContext } from './routes.js';
import { DEFAULT_LIMIT, historyQuery, parseWith } from './schemas.js';

/** The header an export page names the next page's cursor in (absent on the last page). */
export const NEXT_CURSOR_HEADER = 'x-next-cursor';

interface Paged {
  entries: HistoryEntry[];
  nextCursor: string | null;
}

async function conversationHistory(ctx: RouteContext, maxBytes: number): Promise<Paged> {
  const id = ctx.params.conversationId!;
  const q = parseWith(historyQuery, ctx.query, 'query');
  const scope = { conversationId: id };
  const from = q.cursor === undefined ? undefined : decodeHistoryCursor(ctx.tenantId, scope, q.cursor);
  const page = await withConversationErrors(ctx, () =>
    ctx.deps.store.readHistory(ctx.tenantId, id, { limit: q.limit ?? DEFAULT_LIMIT, maxBytes, ...(from ? { from } : {}) }),
  );
  return { entries: page.entries, nextCursor: page.next ? encodeHistoryCursor(ctx.tenantId, scope, page.next) : null };
}

export const historyRoutes: readonly Route[] = [
  {
    method: 'GET',
    path: '/conversations/{conversationId}/history',
    async handle(ctx) {
      return { status: 200, body: await conversationHistory(ctx, MAX_PAGE_BYTES) };
    },
  },
  {
    method: 'GET',
    path: '/sessions/{id}/history',
    async handle(ctx) {
      const q = parseWith(historyQuery, ctx.query, 'query');
      const scope = { sessionId: ctx.params.id! };
      const from = q.cursor === undefined ? undefined : decodeHistoryCursor(ctx.tenantId, scope, q.cursor);
      const page = await ctx.deps.store.readSessionHistory(
        { tenantId: ctx.tenantId, sessionId: scope.sessionId },
        { limit: q.limit ?? DEFAULT_LIMIT, maxBytes: MAX_PAGE_BYTES, ...(from ? { from } : {}) },
      );
      return {
        status: 200,
        body: { entries: page.entries, nextCursor: page.next ? encodeHistoryCursor(ctx.tenantId, scope, page.next) : null },
      };
    },
  },
  {
    method: 'GET',
    path: '/conversations/{conversationId}/export',
    async handle(ctx) {
      const q = parseWith(historyQuery, ctx.query, 'query');
      const page = await withConversationErrors(ctx, () =>
        exportPage(ctx.deps.store, ctx.tenantId, ctx.params.conversationId!, { cursor: q.cursor, limit: q.limit ?? DEFAULT_LIMIT }),
      );
      return {
        status: 200,
        headers: {
          'content-type': 'application/x-ndjson; charset=utf-8',
          ...(page.nextCursor ? { [NEXT_CURSOR_HEADER]: page.nextCursor } : {}),
        },
        text: page.text,
      };
    },
  },
  {
    method: 'POST',
    path: '/conversations/{conversationId}/import',
    async handle(ctx) {
      const { input, sessionIds, items } = readImport(ctx.tenantId, ctx.params.conversationId!, ctx.body, idempotencyOf(ctx));
      // H3: bounded by the tenant's limit as PUT is, before anything is written.
      if (input.retention) await ctx.deps.store.checkRetention(ctx.tenantId, input.retention);
      const sessions = input.sessions.map((s) => s.sessionId);
      const body = {
        conversationId: input.conversationId,
        rootSessionId: sessions[0],
        liveSessionId: sessions.at(-1),
        sessions: sessions.length,
        items,
        sessionIds,
      };
      const r = await ctx.deps.store.importConversation({ ...input, respond: () => ({ status: 201, body }) });
      return r.replayed ? replayed(r.response) : { status: 201, body };
    },
  },
];
