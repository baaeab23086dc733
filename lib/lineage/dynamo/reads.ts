// Reads of a session's items (SPEC A5): a page from a cursor, the tail, everything. Each reads the
// record first (generation, lastSeq, liveness: what is visible), then the rows of that generation.
import type { Item } from '../../items/types.js';
import type { SessionRef } from '../../session-ref.js';
import { CursorStaleError } from '../errors.js';
import type { ItemPage, PageRequest, TailRead } from '../types.js';
import { sessionPk } from './keys.js';
import { rowLimit, toSessionRecord } from './meta-row.js';
import { itemOf, type Table } from './table.js';

export async function readPage(table: Table, ref: SessionRef, page: PageRequest): Promise<ItemPage> {
  const meta = await table.requireMeta(ref);
  if (page.from && page.from.generation !== meta.generation) throw new CursorStaleError(ref.sessionId);
  const { items, more } = await table.queryRange(sessionPk(ref), meta.generation, (page.from?.afterSeq ?? 0) + 1, meta.lastSeq, {
    limit: page.limit,
    maxBytes: page.maxBytes,
    rowLimit: (n) => rowLimit(meta, n),
  });
  const last = items.at(-1);
  // Past lastSeq nothing is visible (a failed commit's leftovers), so a page ending there is the last.
  const next = more && last && last.seq < meta.lastSeq ? { generation: meta.generation, afterSeq: last.seq } : null;
  return { session: toSessionRecord(meta), items: items.map(itemOf), next };
}

export async function readTail(table: Table, ref: SessionRef, limit: number, maxBytes: number): Promise<TailRead> {
  const meta = await table.requireMeta(ref);
  const { items, more } = await table.queryRange(sessionPk(ref), meta.generation, 1, meta.lastSeq, {
    limit,
    maxBytes,
    newestFirst: true,
    rowLimit: (n) => rowLimit(meta, n),
  });
  // Short of `limit` with more left means the size bound cut it, not the start of the session.
  return { session: toSessionRecord(meta), items: items.reverse().map(itemOf), truncated: more && items.length < limit };
}

export async function readAll(table: Table, ref: SessionRef): Promise<Item[]> {
  const meta = await table.requireMeta(ref);
  return table.readItems(sessionPk(ref), meta.generation, 1, meta.lastSeq);
}
