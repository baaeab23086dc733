// Test helper: what compaction must preserve about tool calls (SPEC A2), in either format.
import { expect } from 'vitest';
import { pairCalls } from '../../../lib/items/pairing.js';
import type { FormatAdapter, Item } from '../../../lib/items/types.js';

/**
 * No call separated from its results and none left dangling by compaction: the output has no
 * orphan result and no unanswered call that the input did not already have, and every call
 * still waiting for its result is kept verbatim.
 */
export function expectPairsKept(input: readonly Item[], output: readonly Item[], adapter: FormatAdapter): void {
  const before = pairCalls(input, adapter);
  const after = pairCalls(output, adapter);
  expect(after.orphanResultIds.filter((id) => !before.orphanResultIds.includes(id))).toEqual([]);
  expect([...after.unansweredCallIds].sort()).toEqual([...before.unansweredCallIds].sort());
  for (const id of before.unansweredCallIds) {
    const call = input.find((item) => adapter.toolCallsOf(item).some((c) => c.id === id));
    expect(output).toContainEqual(call);
  }
}
