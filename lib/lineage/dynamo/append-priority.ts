// Fairness for appends (SPEC A4: without expectedCount, appends never fail for concurrency).
//
// Appends to one session are ordered by the record's version: each round one of the racing
// appends wins and the rest go again from the record their failed condition returned. In a
// burst an unlucky append can lose round after round while others land, so it would fail for
// concurrency alone. After PRIORITY_AFTER_LOSSES lost rounds it takes the session's append priority: a field on
// the record (no version bump) that every other append's condition respects, so its next round
// wins. Its own transaction removes the mark; a holder that crashed loses it after PRIORITY_MS.
// Appends that meet someone else's priority wait it out, as they wait out an attempt's seal.
import type { SessionRef } from '../../session-ref.js';
import { withDefaults, type MetaItem, type StoredMeta } from './meta-row.js';
import { isConditionFailure } from './retry.js';
import { oldImageOf, type Table } from './table.js';
import { EXISTS, NO_FOREIGN_PRIORITY } from './conditions.js';

/** Lost rounds before an append takes the priority (a few: most appends never need it). */
export const PRIORITY_AFTER_LOSSES = 3;
/** How long a priority mark holds other appends back at most; the holder's append lifts it in one round trip. */
export const PRIORITY_MS = 500;

/** Milliseconds until someone else's priority on this record lifts (0: none, or it is ours). */
export function foreignPriorityWait(meta: MetaItem, priorityId: string | undefined, now: number): number {
  if (!meta.appendPriority || meta.appendPriority.id === priorityId) return 0;
  return Math.max(0, meta.appendPriority.until - now);
}

/** True when this record shows our priority, still live. */
export function holdsPriority(meta: MetaItem, priorityId: string | undefined, now: number): boolean {
  return priorityId !== undefined && meta.appendPriority?.id === priorityId && meta.appendPriority.until >= now;
}

/**
 * Takes the append priority unless someone else holds a live one. Returns the record as it stands after
 * (ours: the mark is on it) or as it was (theirs: the caller waits it out).
 */
export async function claimPriority(table: Table, ref: SessionRef, priorityId: string): Promise<MetaItem | undefined> {
  const now = table.now();
  try {
    const out = await table.update(
      'take append priority',
      ref,
      { update: 'SET #appendPriority = :appendPriority', condition: `${EXISTS} AND ${NO_FOREIGN_PRIORITY}` },
      { ':appendPriority': { id: priorityId, until: now + PRIORITY_MS }, ':now': now, ':priorityId': priorityId },
      'ALL_NEW',
    );
    return withDefaults(out.Attributes as StoredMeta);
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    return oldImageOf(err); // undefined: the record is gone, which the caller's check reports
  }
}
