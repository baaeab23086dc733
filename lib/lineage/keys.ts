// Table keys for sessions and their messages. Every session key carries its tenant, so the
// same sessionId under two tenants names two different sessions (SPEC F2).
import { createHash } from 'node:crypto';
import type { SessionRef } from '../session-ref.js';

export const META_SK = 'META';
export const MSG_PREFIX = 'MSG#';
export const ATTEMPTS_INDEX = 'attemptsByExpiry';
export const CHILDREN_INDEX = 'childrenByParent';

/** Shards of the sparse in-flight-attempt index, so one partition does not take every attempt. */
export const ATTEMPT_SHARDS = 4;

const PAD = 10;

export function sessionPk(ref: SessionRef): string {
  return `T#${ref.tenantId}#S#${ref.sessionId}`;
}

export function metaKey(ref: SessionRef): { pk: string; sk: string } {
  return { pk: sessionPk(ref), sk: META_SK };
}

function pad(n: number): string {
  return String(n).padStart(PAD, '0');
}

/** Zero-padded so sort-key order is (generation, seq) order. */
export function messageSk(generation: number, seq: number): string {
  return `${MSG_PREFIX}${pad(generation)}#${pad(seq)}`;
}

export function generationPrefix(generation: number): string {
  return `${MSG_PREFIX}${pad(generation)}#`;
}

export function attemptShardOf(pk: string): string {
  const byte = createHash('sha1').update(pk).digest()[0] ?? 0;
  return `A#${byte % ATTEMPT_SHARDS}`;
}

export function allAttemptShards(): string[] {
  return Array.from({ length: ATTEMPT_SHARDS }, (_, i) => `A#${i}`);
}
