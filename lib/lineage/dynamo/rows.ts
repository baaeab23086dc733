// Item rows (SPEC A5, A7; layout in lib/lineage/README.md). An append's items are packed into
// rows: many small items share one row, one large item spans a head row and part rows. A row is
// keyed by the sequence number of its LAST item, `MSG#<generation>#<lastSeq>`, so a Query from
// `MSG#<g>#<from>` starts at the row that holds item `from`. Its attributes:
//   first  the first item's sequence number (items are first, first+1, ...)
//   idx    "length.tokens,length.tokens,...": each item's JSON length (UTF-16 units) and token estimate
//   data   the items' JSON, concatenated (the first chunk when the row has parts)
//   parts  number of further chunks: inline at `MSG#<g>#<lastSeq>#<k>` (written in the same
//          transaction), or, with `w`, at `PART#<w>#<h>#<k>` (written before the commit that made
//          the head visible: an append larger than one transaction)
//   cmp    H1: how many of the row's first items a compaction commit wrote (its summary/replacement);
//          absent: none (rows written before the flag existed are simply not flagged)
// Rows written before packing (`body`, `seq`, `tokens`: one item each) read as rows of one item.
import { ItemTooLargeError } from '../errors.js';
import { MAX_ITEM_BYTES } from '../limits.js';
import { generationPrefix, messageSk } from './keys.js';

/** A row's own bytes (payload and index) stay under DynamoDB's 400 KB item limit with room for keys and TTL. */
export const ROW_BYTES = 360_000;
export const PART_PREFIX = 'PART#';

/** One item as stored: its JSON and token estimate (position-free). */
export interface Encoded {
  body: string;
  bytes: number;
  tokens: number;
}

/** An item read back with its position and the row that holds it (pops need the row). */
export interface StoredItem {
  seq: number;
  body: string;
  tokens: number;
  row: RowRef;
  /** H1: written by a compaction commit (the row's `cmp`). */
  summary?: true;
}

/** Where an item's row lives: enough to shrink or delete it. */
export interface RowRef {
  pk: string;
  sk: string;
  /** Items the row holds now, and its index (absent: a row of the one-item layout). */
  count: number;
  idx?: string;
  /** Inline part keys, or the remote write id whose parts go with the row. */
  partKeys: string[];
  w?: string;
  h?: number;
}

/** A stored row of either layout, as DynamoDB returns it. */
export interface RawRow {
  pk: string;
  sk: string;
  seq?: number;
  first?: number;
  idx?: string;
  data?: string;
  parts?: number;
  w?: string;
  h?: number;
  /** One-item layout. */
  body?: string;
  tokens?: number;
  expiresAt?: number;
  /** H1: the row's first `cmp` items are a compaction's output. */
  cmp?: number;
}

/** JSON of each item, measured once; an item over MAX_ITEM_BYTES refuses the whole append (nothing written). */
export function encodeItems(items: readonly unknown[], tokens: readonly number[]): Encoded[] {
  return items.map((item, i) => {
    const body = JSON.stringify(item);
    const bytes = Buffer.byteLength(body, 'utf8');
    if (bytes > MAX_ITEM_BYTES) throw new ItemTooLargeError(i, bytes, MAX_ITEM_BYTES);
    return { body, bytes, tokens: tokens[i] ?? 0 };
  });
}

/** Items grouped into rows: consecutive small items share a row; an item bigger than a row has its own. */
export function packRows(items: readonly Encoded[]): Encoded[][] {
  const rows: Encoded[][] = [];
  let current: Encoded[] = [];
  let size = 0;
  for (const it of items) {
    const cost = it.bytes + indexEntry(it).length + 1;
    if (current.length > 0 && size + cost > ROW_BYTES) {
      rows.push(current);
      current = [];
      size = 0;
    }
    current.push(it);
    size += cost;
  }
  if (current.length > 0) rows.push(current);
  return rows;
}

function indexEntry(it: Pick<Encoded, 'body' | 'tokens'>): string {
  return `${it.body.length}.${it.tokens}`;
}

/**
 * The stored rows of `groups` from `firstSeq` on; `remote` (a write id) puts every chunk in PART rows.
 * `summaries`: the first that many items are a compaction's output (H1: each row's `cmp`).
 */
export function rowItems(
  pk: string,
  generation: number,
  firstSeq: number,
  groups: readonly Encoded[][],
  remote?: string,
  summaries = 0,
): { heads: RawRow[]; parts: RawRow[]; bytes: number } {
  const heads: RawRow[] = [];
  const parts: RawRow[] = [];
  let bytes = 0;
  let seq = firstSeq;
  groups.forEach((group, h) => {
    const first = seq;
    const last = first + group.length - 1;
    seq = last + 1;
    const sk = messageSk(generation, last);
    const chunks = chunk(group.map((it) => it.body).join(''));
    const head: RawRow = { pk, sk, seq: last, first, idx: group.map(indexEntry).join(',') };
    const flagged = Math.min(group.length, summaries - (first - firstSeq));
    if (flagged > 0) head.cmp = flagged;
    if (remote) {
      head.w = remote;
      head.h = h;
      head.data = '';
      head.parts = chunks.length;
      chunks.forEach((data, k) => parts.push({ pk, sk: remotePartSk(remote, h, k + 1), data }));
    } else {
      head.data = chunks[0] ?? '';
      if (chunks.length > 1) head.parts = chunks.length - 1;
      chunks.slice(1).forEach((data, k) => parts.push({ pk, sk: inlinePartSk(sk, k + 1), data }));
    }
    heads.push(head);
  });
  for (const row of [...heads, ...parts]) bytes += rowBytes(row);
  return { heads, parts, bytes };
}

/** Bytes DynamoDB counts for a row (attribute names and values; numbers at most 21 bytes), with a TTL. */
export function rowBytes(row: RawRow): number {
  let size = 'expiresAt'.length + 21;
  for (const [name, value] of Object.entries(row)) {
    if (value === undefined) continue;
    size += name.length + (typeof value === 'string' ? Buffer.byteLength(value, 'utf8') : 21);
  }
  return size;
}

export function inlinePartSk(headSk: string, k: number): string {
  return `${headSk}#${String(k).padStart(4, '0')}`;
}

export function remotePartPrefix(w: string, h: number): string {
  return `${PART_PREFIX}${w}#${String(h).padStart(4, '0')}#`;
}

function remotePartSk(w: string, h: number, k: number): string {
  return `${remotePartPrefix(w, h)}${String(k).padStart(4, '0')}`;
}

/** Splits text into chunks of at most ROW_BYTES UTF-8 bytes, never inside a surrogate pair. */
export function chunk(text: string): string[] {
  if (Buffer.byteLength(text, 'utf8') <= ROW_BYTES) return [text];
  const out: string[] = [];
  let at = 0;
  while (at < text.length) {
    let n = Math.min(ROW_BYTES, text.length - at);
    for (;;) {
      const bytes = Buffer.byteLength(text.slice(at, at + n), 'utf8');
      if (bytes <= ROW_BYTES) break;
      n = Math.max(1, Math.floor((n * ROW_BYTES) / bytes) - 1);
    }
    const code = text.charCodeAt(at + n - 1);
    if (at + n < text.length && code >= 0xd800 && code <= 0xdbff) n--;
    out.push(text.slice(at, at + n));
    at += n;
  }
  return out;
}

/** Whether a sort key is a row head (not one of its inline parts). */
export function isHeadSk(sk: string): boolean {
  return /^MSG#\d{10}#\d{10}$/.test(sk);
}

/** The head a part belongs to (its sort key without the part number). */
export function headOfPart(sk: string): string {
  return sk.slice(0, sk.lastIndexOf('#'));
}

/** Items of a complete row (head plus its parts' data in order), with their positions. */
export function itemsOfRow(head: RawRow, partData: readonly string[]): StoredItem[] {
  if (typeof head.body === 'string') {
    const seq = head.seq ?? 0;
    return [{ seq, body: head.body, tokens: head.tokens ?? 0, row: { pk: head.pk, sk: head.sk, count: 1, partKeys: [] } }];
  }
  const payload = (head.data ?? '') + partData.join('');
  const entries = (head.idx ?? '').split(',').filter(Boolean);
  const row: RowRef = {
    pk: head.pk,
    sk: head.sk,
    count: entries.length,
    idx: head.idx,
    partKeys: head.w ? [] : Array.from({ length: head.parts ?? 0 }, (_, k) => inlinePartSk(head.sk, k + 1)),
    ...(head.w ? { w: head.w, h: head.h ?? 0 } : {}),
  };
  const items: StoredItem[] = [];
  let at = 0;
  entries.forEach((e, i) => {
    const [len, tok] = e.split('.');
    const n = Number(len);
    const item: StoredItem = { seq: (head.first ?? 0) + i, body: payload.slice(at, at + n), tokens: Number(tok ?? 0), row };
    if (i < (head.cmp ?? 0)) item.summary = true;
    items.push(item);
    at += n;
  });
  return items;
}

/** Key range of one generation's items from `from` to `to` (their rows and inline parts). */
export function itemRange(generation: number, from: number, to: number): { from: string; to: string } {
  return { from: messageSk(generation, from), to: `${messageSk(generation, to)}~` };
}

export { generationPrefix };
