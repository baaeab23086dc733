// H5 import: POST /conversations/{id}/import, the lines of an export (lib/api/export.ts) restored
// into a new conversation. This file reads the lines into the store's ImportInput, mapping every
// session id to a new one; lib/lineage/dynamo/import.ts writes it.
import { randomUUID } from 'node:crypto';
import { validateItems, describeProblem } from '../items/validate.js';
import type { Item } from '../items/types.js';
import type { ImportGeneration, ImportInput, ImportSession, Retention } from '../lineage/history.js';
import { withEstimates } from '../lineage/prepare.js';
import type { IdempotencyInput } from '../lineage/types.js';
import { HttpError } from './errors.js';
import { assertMetadata, retentionField } from './schemas.js';
import * as z from 'zod/mini';

type Json = Record<string, unknown>;

function bad(field: string, message: string): HttpError {
  return new HttpError(400, 'invalid_request', `${field}: ${message}`, { field });
}

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const whole = (v: unknown, min: number): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= min;
const time = (v: unknown): v is string => str(v) && v.length <= 64 && !Number.isNaN(Date.parse(v));

/** The conversation line's settings, held to the bounds PUT/PATCH hold them to (H3 retention, metadata, source). */
function checkSettings(conv: Json): void {
  const at = 'line 1.conversation';
  if (conv.retention !== undefined && conv.retention !== null) {
    const r = z.safeParse(retentionField, conv.retention);
    if (!r.success) throw bad(`${at}.retention`, r.error.issues.map((i) => `${i.path.join('.') || 'retention'}: ${i.message}`).join('; '));
  }
  if (conv.metadata !== undefined && conv.metadata !== null) {
    if (!isObj(conv.metadata)) throw bad(`${at}.metadata`, 'must be a JSON object');
    try {
      assertMetadata(conv.metadata);
    } catch (err) {
      throw bad(`${at}.metadata`, (err as Error).message);
    }
  }
  if (conv.source !== undefined && conv.source !== null && (!str(conv.source) || conv.source.length > 200))
    throw bad(`${at}.source`, 'must be 1-200 characters');
}

/** The lines as the import's input; `sessionIds` maps each exported session id to its new one. */
export function readImport(
  tenantId: string,
  conversationId: string,
  body: unknown,
  idempotency: IdempotencyInput | undefined,
): { input: Omit<ImportInput, 'respond'>; sessionIds: Record<string, string>; items: number } {
  if (!Array.isArray(body) || body.length === 0)
    throw bad('body', 'send the export as application/x-ndjson: a conversation line, then item lines');
  const head: unknown = body[0];
  if (!isObj(head) || head.type !== 'conversation' || !isObj(head.conversation) || !isObj(head.lineage))
    throw bad('line 1', 'must be {"type":"conversation","conversation":{...},"lineage":{...}}');
  const conv = head.conversation;
  const format = conv.format;
  if (format !== 'chat' && format !== 'responses') throw bad('line 1.conversation.format', 'must be chat or responses');
  for (const f of ['createdAt', 'updatedAt', 'activeAt'] as const)
    if (!time(conv[f])) throw bad(`line 1.conversation.${f}`, 'must be an ISO 8601 time');
  checkSettings(conv);
  const chain = head.lineage.chain;
  if (!Array.isArray(chain) || chain.length === 0) throw bad('line 1.lineage.chain', 'must list the sessions, root first');
  const sessionIds: Record<string, string> = {};
  const sessions: ImportSession[] = chain.map((e: unknown, i) => {
    const at = `line 1.lineage.chain[${i}]`;
    if (!isObj(e) || !str(e.sessionId) || !time(e.createdAt)) throw bad(at, 'must be a session of the lineage (sessionId, createdAt)');
    if (e.endedAt !== undefined && e.endedAt !== null && !time(e.endedAt)) throw bad(`${at}.endedAt`, 'must be an ISO 8601 time');
    if (e.deletedAt) throw bad(at, 'a deleted session cannot be imported');
    if (sessionIds[e.sessionId]) throw bad(at, `session ${e.sessionId} is listed twice`);
    sessionIds[e.sessionId] = randomUUID();
    const s: ImportSession = { sessionId: sessionIds[e.sessionId]!, createdAt: e.createdAt, generations: [] };
    if (str(e.endedAt)) s.endedAt = e.endedAt;
    if (e.endReason === 'compression') s.endReason = 'compression';
    if (isObj(e.lastActivity) && str(e.lastActivity.label) && e.lastActivity.label.length <= 200 && time(e.lastActivity.at))
      s.lastActivity = { label: e.lastActivity.label, at: e.lastActivity.at };
    return s;
  });
  const order = Object.keys(sessionIds);
  let position = { session: 0, generation: -1, seq: 0 };
  for (let n = 1; n < body.length; n++) {
    const line: unknown = body[n];
    const at = `line ${n + 1}`;
    if (!isObj(line) || line.type !== 'item') throw bad(at, 'must be {"type":"item",...} (one conversation line, first)');
    const index = str(line.sessionId) ? order.indexOf(line.sessionId) : -1;
    if (index < 0) throw bad(`${at}.sessionId`, 'must be a session of the lineage');
    if (!whole(line.generation, 0) || !whole(line.seq, 1)) throw bad(at, 'generation (>= 0) and seq (>= 1) must be whole numbers');
    const { generation, seq } = line;
    const after =
      index > position.session ||
      (index === position.session && (generation > position.generation || (generation === position.generation && seq > position.seq)));
    if (!after) throw bad(at, 'entries must come in the order an export writes them (session, generation, seq)');
    position = { session: index, generation, seq };
    const checked = validateItems(format, [line.item]);
    if (!checked.ok) throw bad(`${at}.item`, describeProblem(checked.problem));
    const s = sessions[index]!;
    let g: ImportGeneration | undefined = s.generations.at(-1);
    if (g?.generation !== generation) {
      g = { generation, items: [] };
      s.generations.push(g);
    }
    if (line.compactedAt !== undefined && !time(line.compactedAt)) throw bad(`${at}.compactedAt`, 'must be an ISO 8601 time');
    if (time(line.compactedAt) && g.compactedAt === undefined) g.compactedAt = line.compactedAt;
    const item = checked.items[0] as Item;
    g.items.push({
      seq,
      summary: line.summary === true,
      item,
      tokens: withEstimates([item], { format: format }).tokenEstimates[0] ?? 0,
    });
  }
  const retention = isObj(conv.retention) ? (conv.retention as Retention) : undefined;
  const input: Omit<ImportInput, 'respond'> = {
    tenantId,
    conversationId,
    format,
    createdAt: conv.createdAt as string,
    updatedAt: conv.updatedAt as string,
    activeAt: conv.activeAt as string,
    sessions,
    ...(str(conv.source) ? { source: conv.source } : {}),
    ...(isObj(conv.metadata) && Object.keys(conv.metadata).length > 0 ? { metadata: conv.metadata } : {}),
    ...(retention ? { retention } : {}),
    ...(conv.turns === 'required' ? { turnPolicy: 'required' as const } : {}),
    ...(conv.compaction === 'agent' ? { compactionPolicy: 'agent' as const } : {}),
    ...(idempotency ? { idempotency } : {}),
  };
  return { input, sessionIds, items: body.length - 1 };
}
