// Tool-call pairing (SPEC A2): which cuts of a transcript keep every call with its results.
// A "cut" before index t splits items[0..t) from items[t..n); the compaction plan cuts before
// its tail and the human anchor is inserted at a cut, so both ask the same question here.
import type { FormatAdapter, Item } from './types.js';

export interface CallPairing {
  /** Whether cutting (or inserting) before index `at` (0..n) separates no call from its results. */
  isSafeCut(at: number): boolean;
  /** The nearest safe cut at or before `at`; `floor` when none is above it. */
  safeCutAtOrBefore(at: number, floor: number): number;
  /** Ids of calls whose result is not in the transcript (it may still be appended by the client). */
  unansweredCallIds: string[];
  /** Ids answered by results whose call is not in the transcript. */
  orphanResultIds: string[];
}

/**
 * Matches results to calls by id, in order: a result answers the oldest unanswered call with
 * its id (clients that reuse ids per turn still pair up), or, when every call with that id is
 * answered, the latest one (a second result for one call stays with it). Linear in the items.
 */
export function pairCalls(items: readonly Item[], adapter: FormatAdapter): CallPairing {
  const n = items.length;
  const open = new Map<string, number[]>();
  const latest = new Map<string, number>();
  const lastResult = new Map<number, number>();
  const isResult = new Array<boolean>(n).fill(false);
  const orphanResultIds: string[] = [];

  items.forEach((item, i) => {
    const answers = adapter.toolResultIdOf(item);
    if (answers !== undefined) {
      isResult[i] = true;
      const call = open.get(answers)?.shift() ?? latest.get(answers);
      if (call === undefined) orphanResultIds.push(answers);
      else lastResult.set(call, i);
    }
    for (const call of adapter.toolCallsOf(item)) {
      if (call.id === undefined) continue;
      const queue = open.get(call.id) ?? [];
      queue.push(i);
      open.set(call.id, queue);
      latest.set(call.id, i);
    }
  });

  // A pair (call c, last result r) forbids every cut t with c < t <= r; an unanswered call
  // forbids every cut after it (its result would land after whatever follows the cut).
  const earliestCallEndingAt = new Array<number>(n + 1).fill(Number.POSITIVE_INFINITY);
  for (const [call, last] of lastResult) earliestCallEndingAt[last] = Math.min(earliestCallEndingAt[last]!, call);
  const unansweredCallIds: string[] = [];
  for (const [id, queue] of open) {
    for (const call of queue) {
      unansweredCallIds.push(id);
      earliestCallEndingAt[n] = Math.min(earliestCallEndingAt[n]!, call);
    }
  }
  // reach[t]: the earliest call whose pair ends at or after t; a cut at t is inside a pair iff reach[t] < t.
  const reach = new Array<number>(n + 1);
  let min = Number.POSITIVE_INFINITY;
  for (let t = n; t >= 0; t--) {
    min = Math.min(min, earliestCallEndingAt[t]!);
    reach[t] = min;
  }

  const isSafeCut = (at: number): boolean => {
    if (at < 0 || at > n) return false;
    if (reach[at]! < at) return false;
    if (at > 0 && adapter.bindsToNext(items[at - 1]!)) return false;
    // Never start a part on a result, even an orphan one (chat requires it to follow its call).
    return !(at < n && isResult[at]);
  };

  return {
    isSafeCut,
    safeCutAtOrBefore(at, floor) {
      let t = Math.min(at, n);
      while (t > floor && !isSafeCut(t)) t = reach[t]! < t ? Math.max(floor, reach[t]!) : t - 1;
      return Math.max(t, floor);
    },
    unansweredCallIds,
    orphanResultIds,
  };
}
