// Lineage links: the chain root → tip, the live tip of an ended session in a bounded number of
// reads (SPEC C4, F1), and a parent's children (for the fork audit).
//
// Every rotation writes the new child's id as `tipSessionId` on the parent and on the chain's
// root (same transaction), so the tip of any ended session is one or two reads away: its own
// tip pointer, or else its root's. Records from before tip pointers existed are walked child by
// child, at most MAX_TIP_HOPS hops.
import type { SessionRef } from '../../session-ref.js';
import { LineageTooDeepError, SessionEndedError, SessionNotFoundError } from '../errors.js';
import { MAX_TIP_HOPS } from '../limits.js';
import type { MetaItem } from './meta-row.js';
import { CHILDREN_INDEX } from './keys.js';
import type { Key, Table } from './table.js';

/** Longest chain `lineage()` follows in either direction. */
const MAX_CHAIN = 1000;

function isLive(meta: MetaItem): boolean {
  return !meta.endedAt && !meta.childSessionId;
}

/** The live session of `meta`'s chain: itself when live, else its newest descendant (null if that was deleted). */
export async function liveTipOf(table: Table, meta: MetaItem): Promise<string | null> {
  if (isLive(meta)) return meta.deletedAt ? null : meta.sessionId;
  const read = (sessionId: string) => table.getMeta({ tenantId: meta.tenantId, sessionId });
  let cur = await read(meta.tipSessionId ?? meta.childSessionId!);
  if (cur && !isLive(cur)) {
    // The chain moved on since this session rotated: the root knows the newest child.
    const rootId = meta.rootSessionId ?? (meta.parentSessionId ? undefined : meta.sessionId);
    const root = rootId === undefined ? undefined : rootId === meta.sessionId ? meta : await read(rootId);
    const newest = root?.tipSessionId ? await read(root.tipSessionId) : undefined;
    if (newest) cur = newest;
  }
  for (let hops = 0; cur && !isLive(cur); hops++) {
    if (hops >= MAX_TIP_HOPS) throw new LineageTooDeepError(meta.sessionId, MAX_TIP_HOPS);
    if (!cur.childSessionId) break;
    cur = await read(cur.childSessionId);
  }
  if (!cur) return null;
  return cur.deletedAt ? null : cur.sessionId;
}

/**
 * Root to live tip, following parentSessionId up and childSessionId down (deleted sessions
 * included: a tombstone keeps its links). `fromTombstone`: the start may itself be deleted (a
 * conversation's delete walks its chain whatever its client deleted before, K3).
 */
export async function chainOf(table: Table, ref: SessionRef, opts: { fromTombstone?: boolean } = {}): Promise<MetaItem[]> {
  const start = opts.fromTombstone ? await table.getMeta(ref) : await table.requireMeta(ref);
  if (!start) throw new SessionNotFoundError(ref.sessionId);
  const seen = new Set([start.sessionId]);
  const ancestors = await follow(table, start, (m) => m.parentSessionId, seen);
  const descendants = await follow(table, start, (m) => m.childSessionId, seen);
  return [...ancestors.reverse(), start, ...descendants];
}

/** The METAs reached by following `next` from `from` (excluded), stopping at a gap or a cycle. */
async function follow(table: Table, from: MetaItem, next: (m: MetaItem) => string | undefined, seen: Set<string>): Promise<MetaItem[]> {
  const found: MetaItem[] = [];
  for (let cur = from, id = next(cur); id && !seen.has(id); id = next(cur)) {
    if (found.length >= MAX_CHAIN) throw new LineageTooDeepError(from.sessionId, MAX_CHAIN);
    const meta = await table.getMeta({ tenantId: from.tenantId, sessionId: id });
    if (!meta) break;
    seen.add(meta.sessionId);
    found.push(meta);
    cur = meta;
  }
  return found;
}

/** `meta` when its session can still be written: else not found (missing, deleted) or ended, naming the live tip. */
export async function assertLive(table: Table, ref: SessionRef, meta: MetaItem | undefined): Promise<MetaItem> {
  if (!meta || meta.deletedAt) throw new SessionNotFoundError(ref.sessionId);
  if (meta.endedAt || meta.childSessionId) throw new SessionEndedError(ref.sessionId, await liveTipOf(table, meta));
  return meta;
}

/** The live tip of a session given by reference (404 for unknown or deleted sessions). */
export async function liveTip(table: Table, ref: SessionRef): Promise<string | null> {
  return liveTipOf(table, await table.requireMeta(ref));
}

/** The keys of every session whose parent is `parentPk` (childrenByParent: more than one is a fork). */
export function childKeysOf(table: Table, parentPk: string): Promise<Key[]> {
  return table.queryIndex<Key>({
    IndexName: CHILDREN_INDEX,
    KeyConditionExpression: '#p = :p',
    ExpressionAttributeNames: { '#p': 'parentKey' },
    ExpressionAttributeValues: { ':p': parentPk },
  });
}
