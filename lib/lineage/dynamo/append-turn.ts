// Fairness for appends (SPEC A4: without expectedCount, appends never fail for concurrency).
//
// Appends to one session are ordered by the record's version: each round one of the racing
// appends wins and the rest go again from the record their failed condition returned. In a
// burst an unlucky append can lose round after round while others land, so it would fail for
// concurrency alone. After TURN_AFTER_LOSSES lost rounds it takes the session's turn: a field on
// the record (no version bump) that every other append's condition respects, so its next round
// wins. Its own transaction removes the turn; a holder that crashed loses it after TURN_MS.
// Appends that meet someone else's turn wait it out, as they wait out an attempt's seal.
import type { SessionRef } from '../../session-ref.js';
import { withDefaults, type MetaItem, type StoredMeta } from './meta-row.js';
import { isConditionFailure } from './retry.js';
import { oldImageOf, type Table } from './table.js';
import { EXISTS, NO_FOREIGN_TURN } from './conditions.js';

/** Lost rounds before an append takes the turn (a few: most appends never need it). */
export const TURN_AFTER_LOSSES = 3;
/** How long a turn holds other appends back at most; the holder's append lifts it in one round trip. */
export const TURN_MS = 500;

/** Milliseconds until someone else's turn on this record lifts (0: none, or it is ours). */
export function foreignTurnWait(meta: MetaItem, turnId: string | undefined, now: number): number {
  if (!meta.turn || meta.turn.id === turnId) return 0;
  return Math.max(0, meta.turn.until - now);
}

/** True when this record shows our turn, still live. */
export function holdsTurn(meta: MetaItem, turnId: string | undefined, now: number): boolean {
  return turnId !== undefined && meta.turn?.id === turnId && meta.turn.until >= now;
}

/**
 * Takes the turn unless someone else holds a live one. Returns the record as it stands after
 * (ours: the turn is on it) or as it was (theirs: the caller waits it out).
 */
export async function claimTurn(table: Table, ref: SessionRef, turnId: string): Promise<MetaItem | undefined> {
  const now = table.now();
  try {
    const out = await table.update(
      'take append turn',
      ref,
      { update: 'SET #turn = :turn', condition: `${EXISTS} AND ${NO_FOREIGN_TURN}` },
      { ':turn': { id: turnId, until: now + TURN_MS }, ':now': now, ':turnId': turnId },
      'ALL_NEW',
    );
    return withDefaults(out.Attributes as StoredMeta);
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    return oldImageOf(err); // undefined: the record is gone, which the caller's check reports
  }
}
