// A held attempt's public id (SPEC E1, E8): base64url JSON of what acting on the attempt needs
// with no read first: its session, the store's attempt, its fence and snapshot (generation,
// watermark), its TTL, mode and format, and the conversation it was begun in. The conversation
// lets the conversation-form routes refuse another conversation's attempt with no DynamoDB call.
// Never a secret: the lease token is not in it.
import type { ItemFormat } from '../items/types.js';
import type { SessionRecord } from '../lineage/types.js';
import type { CompactionMode } from './types.js';

export interface AttemptKey {
  sessionId: string;
  /** The store's attempt id (the record's attemptId). */
  id: string;
  fence: number;
  generation: number;
  watermark: number;
  ttlMs: number;
  mode: CompactionMode;
  format: ItemFormat;
  /** K1: the session's conversation when the attempt began (absent on records from before conversations). */
  conversationId?: string;
  /** P6: the snapshot is the session's oldest part, through this seq (a row's end, at most `watermark`); the commit replaces exactly it. */
  through?: number;
}

/** The snapshot's last seq: the part's end for a partial attempt (P6), else the attempt's watermark. */
export function snapshotEnd(k: AttemptKey): number {
  return k.through ?? k.watermark;
}

export function encodeAttemptId(k: AttemptKey): string {
  const fields = [k.sessionId, k.id, k.fence, k.generation, k.watermark, k.ttlMs, k.mode, k.format, k.conversationId ?? null];
  if (k.through !== undefined) fields.push(k.through);
  return Buffer.from(JSON.stringify(fields)).toString('base64url');
}

export function decodeAttemptId(attemptId: string): AttemptKey | null {
  try {
    const a = JSON.parse(Buffer.from(attemptId, 'base64url').toString('utf8')) as unknown;
    if (!Array.isArray(a) || (a.length !== 9 && a.length !== 10)) return null;
    const [sessionId, id, fence, generation, watermark, ttlMs, mode, format, conversationId, through] = a as unknown[];
    // E8: a part's end is a positive seq within the snapshot the claim checks (the store checks it ends a row).
    if (through !== undefined && !(Number.isInteger(through) && (through as number) >= 1 && (through as number) < (watermark as number)))
      return null;
    const ints = [fence, generation, watermark, ttlMs].every((n) => Number.isInteger(n) && (n as number) >= 0);
    if (typeof sessionId !== 'string' || typeof id !== 'string' || !ints) return null;
    if ((mode !== 'in_place' && mode !== 'rotate') || (format !== 'chat' && format !== 'responses')) return null;
    if (conversationId !== null && typeof conversationId !== 'string') return null;
    return {
      sessionId,
      id,
      fence: fence as number,
      generation: generation as number,
      watermark: watermark as number,
      ttlMs: ttlMs as number,
      mode,
      format,
      ...(conversationId !== null ? { conversationId } : {}),
      ...(through !== undefined ? { through: through as number } : {}),
    };
  } catch {
    return null;
  }
}

/** The public id of the held attempt a session record holds, or null (the operator CLI lists them). */
export function heldAttemptIdOf(session: SessionRecord): string | null {
  const a = session.attempt;
  if (!a?.held) return null;
  return encodeAttemptId({
    sessionId: session.sessionId,
    id: a.attemptId,
    fence: a.fence,
    generation: session.generation,
    watermark: a.watermark,
    ttlMs: a.held.ttlMs,
    mode: a.held.mode,
    format: session.format,
    ...(session.conversationId !== undefined ? { conversationId: session.conversationId } : {}),
  });
}
