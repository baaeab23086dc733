// H5: a conversation as JSON Lines, a page at a time, the same for the HTTP route (GET
// .../export) and the operators' CLI (`conversations export`). The first page leads with
// {"type":"conversation","conversation":<GET /conversations/{id}>,"lineage":<GET .../lineage>};
// every page then has one {"type":"item", ...entry} line per history entry (H1). The next page's
// cursor travels beside the lines (the HTTP route: the x-next-cursor header), so the pages of an
// export concatenate into one file.
import { ConversationNotFoundError } from '../lineage/errors.js';
import { decodeHistoryCursor, encodeHistoryCursor } from '../lineage/history.js';
import { MAX_PAGE_BYTES } from '../lineage/limits.js';
import type { LineageStore } from '../lineage/types.js';
import { conversationView, lineageEntryView, policiesOf } from './views.js';

export interface ExportPage {
  text: string;
  nextCursor: string | null;
}

/** The export's first line. */
export async function conversationLine(store: LineageStore, tenantId: string, conversationId: string): Promise<string> {
  const conv = await store.getConversation(tenantId, conversationId);
  if (!conv) throw new ConversationNotFoundError(conversationId);
  const ref = { tenantId, sessionId: conv.liveSessionId };
  const [live, chain] = await Promise.all([store.getSession(ref), store.lineage(ref)]);
  const isLive = live !== null && live.endedAt === undefined && live.childSessionId === undefined;
  const conversation = conversationView(conv, isLive ? live.messageCount : 0, isLive ? policiesOf(live) : undefined);
  const last = chain.at(-1);
  const lineage = { chain: chain.map(lineageEntryView), tip: !last || last.deletedAt ? null : last.sessionId };
  return `${JSON.stringify({ type: 'conversation', conversation, lineage })}\n`;
}

/** One page: the conversation line first when `cursor` is absent. */
export async function exportPage(
  store: LineageStore,
  tenantId: string,
  conversationId: string,
  q: { cursor?: string | undefined; limit: number },
): Promise<ExportPage> {
  const scope = { conversationId };
  const from = q.cursor === undefined ? undefined : decodeHistoryCursor(tenantId, scope, q.cursor);
  const head = from ? '' : await conversationLine(store, tenantId, conversationId);
  const page = await store.readHistory(tenantId, conversationId, {
    limit: q.limit,
    maxBytes: MAX_PAGE_BYTES - Buffer.byteLength(head, 'utf8'),
    ...(from ? { from } : {}),
  });
  const lines = page.entries.map((e) => `${JSON.stringify({ type: 'item', ...e })}\n`);
  return { text: head + lines.join(''), nextCursor: page.next ? encodeHistoryCursor(tenantId, scope, page.next) : null };
}
