// Splits a transcript into what every engine keeps verbatim and the middle it may replace
// with one summary: the leading instructions, the first human turn, the last K items.
// The tail's start is moved back until no tool call is cut from its results (SPEC A2): a
// call and its results are both kept or both summarized, and a call whose result is not in
// the transcript yet (the client may append it while we compact) is kept in the tail.
import { pairCalls } from '../items/pairing.js';
import type { FormatAdapter, Item } from '../items/types.js';

export const DEFAULT_KEEP_LAST = 6;
/** Replacing fewer middle items than this with a summary cannot save anything. */
const MIN_MIDDLE_ITEMS = 2;

export interface TranscriptPlan {
  head: Item[];
  firstHuman: Item | undefined;
  middle: Item[];
  tail: Item[];
}

export function resolveKeepLast(keepLast: number | undefined): number {
  return keepLast !== undefined && Number.isInteger(keepLast) && keepLast >= 0 ? keepLast : DEFAULT_KEEP_LAST;
}

/** The plan, or undefined when there is nothing worth compacting. */
export function planCompaction(items: readonly Item[], adapter: FormatAdapter, keepLast?: number): TranscriptPlan | undefined {
  let headEnd = 0;
  while (headEnd < items.length && adapter.isInstruction(items[headEnd]!)) headEnd++;

  const wanted = Math.max(headEnd, items.length - resolveKeepLast(keepLast));
  const tailStart = pairCalls(items, adapter).safeCutAtOrBefore(wanted, headEnd);

  let firstHumanIndex = -1;
  for (let i = headEnd; i < tailStart; i++) {
    if (adapter.isHumanTurn(items[i]!)) {
      firstHumanIndex = i;
      break;
    }
  }

  const middle: Item[] = [];
  for (let i = headEnd; i < tailStart; i++) {
    if (i !== firstHumanIndex) middle.push(items[i]!);
  }
  if (middle.length < MIN_MIDDLE_ITEMS) return undefined;

  return {
    head: items.slice(0, headEnd),
    firstHuman: firstHumanIndex >= 0 ? items[firstHumanIndex] : undefined,
    middle,
    tail: items.slice(tailStart),
  };
}

/** The compacted transcript: head, first human turn, the summary, then the tail (shallow copies). */
export function assemble(plan: TranscriptPlan, summary: Item): Item[] {
  return [...plan.head, ...(plan.firstHuman ? [plan.firstHuman] : []), summary, ...plan.tail].map((item) => ({ ...item }));
}
