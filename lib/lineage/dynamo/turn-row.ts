// A conversation turn as the session record stores it (SPEC T1-T6), and what a refused write
// learns from the record its failed condition returned. Kept apart from turns.ts so sessions.ts
// and commit.ts use it without an import cycle.
//
// The turn lives on the live session's META, so an append's own transaction checks it (T3) and a
// warm append stays one call (P5). Its token is stored only as a SHA-256 hash. An ended turn stays
// as `activeTurn` with `ended` and `expiresAt` 0 until the next begin moves it to `prevTurn`: a
// write of the ended, superseded or expired turn is then told which.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { TurnNotCurrentError, TurnRequiredError, TurnTokenInvalidError } from '../turn-errors.js';
import type { TurnCredential, TurnGrant, TurnView } from '../types.js';
import { OUR_TURN, TURNS_NOT_REQUIRED } from './conditions.js';
import { expression } from './expression.js';
import type { TransactItem } from './table.js';
import type { MetaItem, StoredTurn } from './meta-row.js';

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url');
}

/** `turnGen` of a turn that replaced items from before it began: nothing brings them back (T2 rollback). */
export const REWROTE_BEFORE_TURN = -2;

/** T3/T5: a write with a token lands only under its current turn; one without only if turns are optional. */
export function turnClause(turn: TurnCredential | undefined): string {
  return turn ? OUR_TURN : TURNS_NOT_REQUIRED;
}

/** The constants `turnClause` names. */
export function turnValues(turn: TurnCredential | undefined): Record<string, unknown> {
  return turn ? { ':turnId': turn.turnId, ':tokenHash': hashToken(turn.token) } : { ':required': 'required' };
}

/**
 * T3 on a compaction's commit: the record update `entry` lands only while `turn` is current, in
 * the commit's own transaction (no token: unchanged, turns never block compaction, T4).
 */
export function fencedByTurn(entry: TransactItem, turn: TurnCredential | undefined, now: number): TransactItem {
  const u = entry.Update;
  if (!turn || !u) return entry;
  const extra = expression({ condition: OUR_TURN }, { ...turnValues(turn), ':now': now });
  return {
    Update: {
      ...u,
      ConditionExpression: `(${u.ConditionExpression}) AND ${OUR_TURN}`,
      ExpressionAttributeNames: { ...u.ExpressionAttributeNames, ...extra.ExpressionAttributeNames },
      ExpressionAttributeValues: { ...u.ExpressionAttributeValues, ...extra.ExpressionAttributeValues },
    },
  };
}

/** A fresh turn: its id, its secret token (`<turnId>.<secret>`) and what the record keeps of it. */
export function newTurn(now: number, ttlMs: number): { stored: StoredTurn; token: string } {
  const turnId = randomUUID();
  const token = `${turnId}.${randomBytes(24).toString('base64url')}`;
  return { stored: { turnId, tokenHash: hashToken(token), startedAt: now, expiresAt: now + ttlMs }, token };
}

/** The current turn: there, not ended, not expired. */
export function liveTurn(meta: MetaItem, now: number): StoredTurn | undefined {
  const t = meta.activeTurn;
  return t && !t.ended && t.expiresAt >= now ? t : undefined;
}

export function turnView(t: StoredTurn): TurnView {
  return { turnId: t.turnId, startedAt: new Date(t.startedAt).toISOString(), expiresAt: new Date(t.expiresAt).toISOString() };
}

export function turnGrant(t: StoredTurn, token: string, fence: number): TurnGrant {
  return { ...turnView(t), turnToken: token, fence };
}

/**
 * Why a write of `cred` cannot land on this record (T3, T6), or null when its turn is current.
 * A token that does not match the turn it names is refused as invalid, whatever the turn's state.
 */
export function turnRefusal(meta: MetaItem, cred: TurnCredential, now: number): Error | null {
  const hash = hashToken(cred.token);
  const cur = meta.activeTurn;
  if (cur?.turnId === cred.turnId) {
    if (cur.tokenHash !== hash) return new TurnTokenInvalidError();
    if (cur.ended) return new TurnNotCurrentError(cred.turnId, 'turn_ended');
    if (cur.expiresAt < now) return new TurnNotCurrentError(cred.turnId, 'turn_expired');
    return null;
  }
  const prev = meta.prevTurn;
  if (prev?.turnId === cred.turnId) {
    if (prev.tokenHash !== hash) return new TurnTokenInvalidError();
    if (prev.ended) return new TurnNotCurrentError(cred.turnId, 'turn_ended');
    // Replaced after it had expired: the next begin was granted because it expired (T6).
    if (cur && prev.expiresAt < cur.startedAt) return new TurnNotCurrentError(cred.turnId, 'turn_expired');
  }
  return new TurnNotCurrentError(cred.turnId, 'turn_superseded');
}

/** What a write with (or without) a turn token is refused for on this record, or null (T3, T5). */
export function writeRefusal(meta: MetaItem, cred: TurnCredential | undefined, now: number): Error | null {
  if (cred) return turnRefusal(meta, cred, now);
  return meta.turnPolicy === 'required' ? new TurnRequiredError(meta.conversationId ?? meta.sessionId) : null;
}

/** T4: the turn fields a rotation's child takes over (its generation mark set apart: a compaction happened). */
export function turnStateOf(meta: MetaItem): Partial<MetaItem> {
  if (meta.turnSeq === undefined) return {};
  return {
    activeTurn: meta.activeTurn,
    prevTurn: meta.prevTurn,
    turnFence: meta.turnFence,
    turnFrom: meta.turnFrom,
    turnGen: -1,
    turnAppended: meta.turnAppended,
    turnSeq: meta.turnSeq,
    turnQueue: meta.turnQueue,
    turnPolicy: meta.turnPolicy,
  };
}
