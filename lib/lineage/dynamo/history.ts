// H1/H3: a conversation's history, a page at a time. A page reads its records (one BatchGet: the
// conversation, the tenant's retention, the session the cursor is in and the marker of its
// generation; the first page reads the root's record after the conversation's) and ONE Query of
// that session's rows, from the cursor to the end of its active generation: archived generations
// (each announced by its replacement marker `MSG#<g>#!`, keys.ts) come first, in order, then the
// generation that was active when the session rotated, or the live one. Rows of a generation with
// no marker that is not the active one are leftovers of a commit that never landed: skipped. A page
// never reads a second session: when one ends, the cursor moves to its child (so a page may hold
// fewer than `limit` entries; callers follow nextCursor until it is null).
//
// H3 at read time: an archived generation is visible until compactedAt + archivedSeconds, a
// rotated session's items until its endedAt + endedSessionSeconds (when set), and a row whose TTL
// passed is absent whatever DynamoDB's deleter did. A shortened setting applies at once.
import { BatchGetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ConversationNotFoundError, SessionNotFoundError } from '../errors.js';
import { InvalidCursorError } from '../cursor.js';
import {
  effectiveRetention,
  type HistoryEntry,
  type HistoryPage,
  type HistoryPosition,
  type HistoryRequest,
  type Retention,
} from '../history.js';
import { conversationKey, type ConversationItem } from './conversation-row.js';
import { generationPrefix, isReplacedMarkerSk, messageSk, metaKey, MSG_PREFIX, replacedMarkerSk, sessionPk } from './keys.js';
import { rowLimit, withDefaults, type MetaItem, type StoredMeta } from './meta-row.js';
import { headOfPart, isHeadSk, itemsOfRow, remotePartPrefix, type RawRow } from './rows.js';
import { retentionOf, tenantSettingsKey } from './retention.js';
import { itemOf, type Key, type Table } from './table.js';

/** Bytes an entry adds to a page besides its item's JSON (ids, numbers, the time). */
const ENTRY_OVERHEAD = 200;

interface Marker {
  generation: number;
  compactedAt: string;
}

interface Window {
  /** Effective retention (H3). */
  archivedMs: number;
  endedMs?: number;
  now: number;
  /** The last session the read covers (the session twin); absent: the live tip. */
  until?: string;
}

function generationOf(sk: string): number {
  return Number(sk.slice(MSG_PREFIX.length, MSG_PREFIX.length + 10));
}

export class History {
  constructor(
    private readonly table: Table,
    private readonly defaultArchivedSeconds: number,
  ) {}

  /** GET /conversations/{id}/history. */
  async ofConversation(tenantId: string, conversationId: string, req: HistoryRequest): Promise<HistoryPage & { rootSessionId: string }> {
    const convKey = conversationKey(tenantId, conversationId);
    const got = await this.records([convKey, tenantSettingsKey(tenantId), ...this.cursorKeys(tenantId, req.from)]);
    const conv = got.get(keyOf(convKey)) as ConversationItem | undefined;
    if (!conv) throw new ConversationNotFoundError(conversationId);
    const meta = await this.sessionAt(tenantId, got, req.from, conv.rootSessionId);
    if (!meta || meta.deletedAt || (meta.rootSessionId ?? meta.sessionId) !== conv.rootSessionId) throw badStart(req.from, conversationId);
    const window = this.window(conv, got.get(keyOf(tenantSettingsKey(tenantId))));
    const page = await this.read(meta, req, window, markerOf(got, tenantId, req.from));
    return { ...page, rootSessionId: conv.rootSessionId };
  }

  /** GET /sessions/{id}/history: the history of the session's conversation up to and including it. */
  async ofSession(tenantId: string, sessionId: string, req: HistoryRequest): Promise<HistoryPage> {
    const asked = await this.table.getMeta({ tenantId, sessionId });
    if (!asked || asked.deletedAt) throw new SessionNotFoundError(sessionId);
    const root = asked.rootSessionId ?? asked.sessionId;
    const convKeys = asked.conversationId === undefined ? [] : [conversationKey(tenantId, asked.conversationId)];
    const got = await this.records([...convKeys, tenantSettingsKey(tenantId), ...this.cursorKeys(tenantId, req.from)]);
    const conv = convKeys[0] ? (got.get(keyOf(convKeys[0])) as ConversationItem | undefined) : undefined;
    const meta = await this.sessionAt(tenantId, got, req.from, root);
    if (!meta || meta.deletedAt || (meta.rootSessionId ?? meta.sessionId) !== root) throw badStart(req.from, sessionId);
    const window = { ...this.window(conv, got.get(keyOf(tenantSettingsKey(tenantId)))), until: sessionId };
    return this.read(meta, req, window, markerOf(got, tenantId, req.from));
  }

  private window(conv: Retention | undefined, tenant: unknown): Window {
    const r = effectiveRetention(retentionOf(conv), retentionOf(tenant as Retention | undefined), this.defaultArchivedSeconds);
    return {
      archivedMs: r.archivedSeconds * 1000,
      ...(r.endedSessionSeconds !== undefined ? { endedMs: r.endedSessionSeconds * 1000 } : {}),
      now: this.table.now(),
    };
  }

  private cursorKeys(tenantId: string, from: HistoryPosition | undefined): Key[] {
    if (!from) return [];
    const ref = { tenantId, sessionId: from.sessionId };
    return [metaKey(ref), ...(from.afterSeq > 0 ? [{ pk: sessionPk(ref), sk: replacedMarkerSk(from.generation) }] : [])];
  }

  private async sessionAt(tenantId: string, got: Map<string, unknown>, from: HistoryPosition | undefined, root: string) {
    if (from) {
      const stored = got.get(keyOf(metaKey({ tenantId, sessionId: from.sessionId })));
      return stored ? withDefaults(stored as StoredMeta) : undefined;
    }
    return this.table.getMeta({ tenantId, sessionId: root });
  }

  /** One BatchGet (its unprocessed keys asked again). */
  private async records(keys: Key[]): Promise<Map<string, unknown>> {
    const found = new Map<string, unknown>();
    let pending: Key[] = keys;
    while (pending.length > 0) {
      const out = await this.table.send('read history records', () =>
        this.table.doc.send(new BatchGetCommand({ RequestItems: { [this.table.name]: { Keys: pending, ConsistentRead: true } } })),
      );
      for (const item of out.Responses?.[this.table.name] ?? []) found.set(keyOf(item as Key), item);
      pending = (out.UnprocessedKeys?.[this.table.name]?.Keys ?? []) as Key[];
    }
    return found;
  }

  private async read(start: MetaItem, req: HistoryRequest, w: Window, cursorMarker: Marker | undefined): Promise<HistoryPage> {
    let meta = start;
    let from = req.from;
    // A session whose rotated items all expired (H3) is passed over without a Query: its child's record is read instead.
    while (meta.endedAt && meta.childSessionId && w.endedMs !== undefined && w.now >= Date.parse(meta.endedAt) + w.endedMs) {
      if (meta.sessionId === w.until) return { entries: [], next: null };
      const child = await this.table.getMeta({ tenantId: meta.tenantId, sessionId: meta.childSessionId });
      if (!child || child.deletedAt) return { entries: [], next: null };
      meta = child;
      from = undefined;
    }
    const afterSession = (): HistoryPosition | null =>
      meta.sessionId === w.until || !meta.childSessionId ? null : { sessionId: meta.childSessionId, generation: 0, afterSeq: 0 };
    const lower = !from
      ? MSG_PREFIX
      : from.afterSeq === 0
        ? generationPrefix(from.generation)
        : messageSk(from.generation, from.afterSeq + 1);
    const upper = `${messageSk(meta.generation, meta.lastSeq)}~`;
    if (lower > upper) return { entries: [], next: afterSession() };
    const pk = sessionPk(meta);
    const query = (start?: Record<string, unknown>) =>
      this.table.send('read history', () =>
        this.table.doc.send(
          new QueryCommand({
            TableName: this.table.name,
            ConsistentRead: true,
            KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
            ExpressionAttributeValues: { ':pk': pk, ':from': lower, ':to': upper },
            Limit: rowLimit(meta, req.limit) + 2,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      );
    let out = await query();
    const rows = (out.Items ?? []) as (RawRow & Partial<Marker>)[];
    // An item whose inline parts pass the Query's 1 MB page ends no whole row: read on until one ends,
    // else the next page would start where this one did, for ever.
    while (out.LastEvaluatedKey && !endsAWholeRow(rows)) {
      out = await query(out.LastEvaluatedKey);
      rows.push(...((out.Items ?? []) as (RawRow & Partial<Marker>)[]));
    }
    const rotatedAt = meta.childSessionId ? meta.endedAt : undefined;
    const entries: HistoryEntry[] = [];
    let bytes = 0;
    let marker = cursorMarker;
    /** Where the rows processed so far end: the next page starts after it. */
    let done: HistoryPosition | null = from ?? null;
    let pending: { head: RawRow; parts: string[] } | undefined;
    const at = (generation: number, afterSeq: number): HistoryPosition => ({ sessionId: meta.sessionId, generation, afterSeq });
    /** When a generation's items were replaced (undefined: live), or null: not shown (a leftover, or expired). */
    const statusOf = (g: number, expiresAt: number | undefined): string | undefined | null => {
      if (expiresAt !== undefined && expiresAt * 1000 <= w.now) return null;
      if (g === meta.generation) return rotatedAt;
      if (marker?.generation !== g) return null;
      return w.now < Date.parse(marker.compactedAt) + w.archivedMs ? marker.compactedAt : null;
    };
    /** Emits a whole row; a position when the page is full before the row's end. */
    const take = async (head: RawRow, parts: string[]): Promise<HistoryPosition | undefined> => {
      const g = generationOf(head.sk);
      const status = statusOf(g, head.expiresAt);
      const items = itemsOfRow(head, parts);
      const last = items.at(-1)?.seq ?? head.seq ?? 0;
      if (status === null) {
        // Nothing of this generation can show: the next page starts at the next one.
        done = g === meta.generation ? at(g, last) : at(g + 1, 0);
        return undefined;
      }
      const data = head.w
        ? (await this.table.queryPrefix<RawRow>(pk, remotePartPrefix(head.w, head.h ?? 0))).map((r) => r.data ?? '')
        : parts;
      for (const it of head.w ? itemsOfRow(head, data) : items) {
        if (from && g === from.generation && it.seq <= from.afterSeq) continue;
        if (g === meta.generation && it.seq > meta.lastSeq) break;
        const size = Buffer.byteLength(it.body, 'utf8') + ENTRY_OVERHEAD;
        if (entries.length >= req.limit || (entries.length > 0 && bytes + size > req.maxBytes)) return done ?? at(g, 0);
        bytes += size;
        entries.push({
          sessionId: meta.sessionId,
          generation: g,
          seq: it.seq,
          ...(status !== undefined ? { compactedAt: status } : {}),
          ...(it.summary ? { summary: true as const } : {}),
          item: itemOf(it),
        });
        done = at(g, it.seq);
      }
      done = at(g, last);
      return undefined;
    };
    for (const row of rows) {
      if (isReplacedMarkerSk(row.sk)) {
        marker = { generation: generationOf(row.sk), compactedAt: String(row.compactedAt) };
        done = at(marker.generation, 0);
      } else if (isHeadSk(row.sk)) {
        if (row.parts && !row.w && row.body === undefined) pending = { head: row, parts: [] };
        else {
          const full = await take(row, []);
          if (full) return { entries, next: full };
        }
      } else if (pending && headOfPart(row.sk) === pending.head.sk) {
        pending.parts.push(row.data ?? '');
        if (pending.parts.length >= (pending.head.parts ?? 0)) {
          const full = await take(pending.head, pending.parts);
          pending = undefined;
          if (full) return { entries, next: full };
        }
      }
    }
    if (!out.LastEvaluatedKey && !pending) return { entries, next: afterSession() };
    // The Query stopped early (its Limit, or 1 MB): go on where the whole rows read end.
    if (pending) done = at(generationOf(pending.head.sk), Math.max(0, (pending.head.first ?? 1) - 1));
    return { entries, next: done ?? at(0, 0) };
  }
}

/** Whether the rows hold at least one whole item row (a head without inline parts, or one with all of them). */
function endsAWholeRow(rows: readonly RawRow[]): boolean {
  let head: RawRow | undefined;
  let parts = 0;
  for (const row of rows) {
    if (isReplacedMarkerSk(row.sk)) continue;
    if (isHeadSk(row.sk)) {
      if (!(row.parts && !row.w && row.body === undefined)) return true;
      head = row;
      parts = 0;
    } else if (head && headOfPart(row.sk) === head.sk && ++parts >= (head.parts ?? 0)) return true;
  }
  return false;
}

function keyOf(k: Key): string {
  return `${k.pk}\u0000${k.sk}`;
}

function markerOf(got: Map<string, unknown>, tenantId: string, from: HistoryPosition | undefined): Marker | undefined {
  if (!from || from.afterSeq === 0) return undefined;
  const m = got.get(keyOf({ pk: sessionPk({ tenantId, sessionId: from.sessionId }), sk: replacedMarkerSk(from.generation) })) as
    Partial<Marker> | undefined;
  return m?.compactedAt ? { generation: from.generation, compactedAt: m.compactedAt } : undefined;
}

/** A cursor naming a session outside the conversation is not one we issued for it; no session at all is not found. */
function badStart(from: HistoryPosition | undefined, id: string): Error {
  return from ? new InvalidCursorError() : new SessionNotFoundError(id);
}
