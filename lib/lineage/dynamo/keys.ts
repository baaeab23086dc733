// Table keys. Every session key carries its tenant, so the same sessionId under two tenants
// names two different sessions (SPEC F2). Layout under one session's pk:
//   META                      the session record
//   MSG#<generation>#<lastSeq>  a row of items ending at lastSeq, and its parts (rows.ts; zero-padded:
//                             sort order is (generation, seq) order)
//   MSG#<generation>#!        H1: the generation was replaced in place (`compactedAt`), written by
//                             that commit; it sorts before the generation's rows, outside every item range
//   IDEM#<sha256(key)>        an append's Idempotency-Key record (A3)
//   TASK#<kind>#<generation>  deferred storage work (archive, purge, ended) the sweep finds in attemptsByExpiry
//   TASK#parts#<write id>     chunks an append wrote ahead of its commit, removed unless the commit lands
//   PART#<write id>#<row>#<k> those chunks (lib/lineage/dynamo/rows.ts)
//   HELD#<attempt id>         a held attempt's outcome (E3, E4: a repeated commit replays it; held.ts)
// Create-session idempotency records live at `T#<tenant>#IDEM#<sha256(key)>` / `IDEM`.
import { createHash } from 'node:crypto';
import type { SessionRef } from '../../session-ref.js';
import type { StoreTask } from '../types.js';

export const META_SK = 'META';
export const MSG_PREFIX = 'MSG#';
export const IDEM_PREFIX = 'IDEM#';
export const TASK_PREFIX = 'TASK#';
export const HELD_PREFIX = 'HELD#';
export const ATTEMPTS_INDEX = 'attemptsByExpiry';
export const CHILDREN_INDEX = 'childrenByParent';
export const ROTATIONS_INDEX = 'rotationsByTime';

// The defaults live with every other default in lib/config.ts.
export { DEFAULT_ATTEMPT_SHARDS, DEFAULT_ROTATION_SHARDS } from '../../config.js';
/** Shard queries one sweep step runs at once: every shard is read each run, never all at once. */
export const SHARD_QUERY_CONCURRENCY = 16;

const PAD = 10;

export function sessionPk(ref: SessionRef): string {
  return `T#${ref.tenantId}#S#${ref.sessionId}`;
}

/** Inverse of sessionPk (tenant ids and session ids never contain '#'). */
export function refOfPk(pk: string): SessionRef {
  const m = /^T#([^#]+)#S#([^#]+)$/.exec(pk);
  if (!m) throw new Error(`not a session key: ${pk}`);
  return { tenantId: m[1]!, sessionId: m[2]! };
}

export function metaKey(ref: SessionRef): { pk: string; sk: string } {
  return { pk: sessionPk(ref), sk: META_SK };
}

function pad(n: number): string {
  return String(n).padStart(PAD, '0');
}

export function messageSk(generation: number, seq: number): string {
  return `${MSG_PREFIX}${pad(generation)}#${pad(seq)}`;
}

export function generationPrefix(generation: number): string {
  return `${MSG_PREFIX}${pad(generation)}#`;
}

/** H1: the marker an in-place commit writes for the generation it replaced (history reads it). */
export function replacedMarkerSk(generation: number): string {
  return `${generationPrefix(generation)}!`;
}

export function isReplacedMarkerSk(sk: string): boolean {
  return /^MSG#\d{10}#!$/.test(sk);
}

function digest(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

export function appendIdempotencyKey(ref: SessionRef, key: string): { pk: string; sk: string } {
  return { pk: sessionPk(ref), sk: `${IDEM_PREFIX}${digest(key)}` };
}

export function createIdempotencyKey(tenantId: string, key: string): { pk: string; sk: string } {
  return { pk: `T#${tenantId}#IDEM#${digest(key)}`, sk: 'IDEM' };
}

export function taskSk(kind: StoreTask['kind'], generation: number): string {
  return `${TASK_PREFIX}${kind}#${pad(generation)}`;
}

export function partsTaskSk(scope: string): string {
  return `${TASK_PREFIX}parts#${scope}`;
}

export function parseTaskSk(sk: string): Pick<StoreTask, 'kind' | 'generation' | 'scope'> | null {
  const parts = /^TASK#parts#([0-9a-f-]+(?:#\d+)?)$/.exec(sk);
  if (parts) return { kind: 'parts', generation: 0, scope: parts[1]! };
  const m = /^TASK#(archive|purge|ended)#(\d+)$/.exec(sk);
  return m ? { kind: m[1] as StoreTask['kind'], generation: Number(m[2]) } : null;
}

function shardOf(pk: string, shards: number): number {
  return createHash('sha1').update(pk).digest().readUInt32BE(0) % shards;
}

export function attemptShardOf(pk: string, shards: number): string {
  return `A#${shardOf(pk, shards)}`;
}

export function rotationShardOf(pk: string, shards: number): string {
  return `R#${shardOf(pk, shards)}`;
}

export function allShards(prefix: 'A' | 'R', shards: number): string[] {
  return Array.from({ length: shards }, (_, i) => `${prefix}#${i}`);
}
