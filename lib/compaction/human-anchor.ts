// Human anchor (SPEC C8, A2): chat templates reject a context with no user turn, and a summary
// or scaffolding is not the human's request. If compaction dropped every real user turn, put
// the last one back, in either format, without creating two consecutive user-role items and
// without landing between a tool call and its result.
import { pairCalls } from '../items/pairing.js';
import type { FormatAdapter, Item } from '../items/types.js';

export interface AnchorResult {
  items: Item[];
  /** How the anchor came back: not needed, inserted as its own turn, merged into a user-role neighbour. */
  restored: 'none' | 'inserted' | 'merged';
}

/** A real human turn (SPEC C8): role user, not synthetic scaffolding, not a summary; in the adapter's format. */
export function isRealUserMessage(item: Item, adapter: FormatAdapter): boolean {
  return adapter.isHumanTurn(item);
}

export function hasRealUserMessage(items: readonly Item[], adapter: FormatAdapter): boolean {
  return items.some((item) => adapter.isHumanTurn(item));
}

/**
 * Returns `compacted` (shallow copies) with the last real user turn of `input` restored when
 * `compacted` has none. Never mutates its arguments.
 */
export function restoreHumanAnchor(compacted: readonly Item[], input: readonly Item[], adapter: FormatAdapter): AnchorResult {
  const out = compacted.map((item) => ({ ...item }));
  if (hasRealUserMessage(out, adapter)) return { items: out, restored: 'none' };
  const anchor = input.findLast((item) => adapter.isHumanTurn(item));
  if (!anchor) return { items: out, restored: 'none' };
  return insertAnchor(out, { ...anchor }, adapter);
}

/**
 * Places `anchor` right after the last instruction or summary (the compacted head, before the
 * kept tail), else at the nearest slot with no user-role neighbour that separates no call from
 * its results. When every such slot touches a user turn, merges into the nearest user-role
 * item, leading with the human text and dropping the synthetic flag.
 */
export function insertAnchor(items: Item[], anchor: Item, adapter: FormatAdapter): AnchorResult {
  const isUser = (i: number): boolean => i >= 0 && i < items.length && adapter.roleOf(items[i]!) === 'user';
  const pairing = pairCalls(items, adapter);
  const preferred = items.findLastIndex((item) => adapter.isInstruction(item) || adapter.isSummary(item)) + 1;
  const nearest = [...range(preferred, items.length), ...range(0, preferred - 1).reverse()];

  const slot = nearest.find((i) => pairing.isSafeCut(i) && !isUser(i - 1) && !isUser(i));
  if (slot !== undefined) {
    items.splice(slot, 0, anchor);
    return { items, restored: 'inserted' };
  }
  const target = nearest.find((i) => isUser(i));
  if (target !== undefined) {
    items[target] = adapter.mergeHumanText(items[target]!, anchor);
    return { items, restored: 'merged' };
  }
  // No user-role item and no safe slot (only orphan results and dangling calls): the human turn
  // matters more than a pairing the input already broke. Lead with it.
  items.unshift(anchor);
  return { items, restored: 'inserted' };
}

function range(from: number, toInclusive: number): number[] {
  const r: number[] = [];
  for (let i = Math.max(0, from); i <= toInclusive; i++) r.push(i);
  return r;
}
