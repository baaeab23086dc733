// P6 (issue 35): the part of a long session one attempt replaces. The store cuts it at a row
// boundary within the budget; this decides where a cut is acceptable (A2: a tool call and its
// result stay on one side, and nothing that binds to the next item ends the part).
import { adapterFor } from '../items/adapters.js';
import type { FormatAdapter, Item } from '../items/types.js';
import type { AttemptBudget, SnapshotBound } from '../lineage/types.js';

function cutOkFor(part: readonly Item[], adapter: FormatAdapter): boolean {
  const open = new Set<string>();
  for (const item of part) {
    for (const call of adapter.toolCallsOf(item)) if (call.id !== undefined) open.add(call.id);
    const result = adapter.toolResultIdOf(item);
    if (result !== undefined) open.delete(result);
  }
  const last = part.at(-1);
  return open.size === 0 && !(last && adapter.bindsToNext(last));
}

/**
 * The bound an attempt hands the store. The cut check holds in both formats: it runs before the
 * session's format is known (the read beside the begin), and a format's adapter finds no calls in
 * the other's items.
 */
export function snapshotBound(budget: AttemptBudget): SnapshotBound {
  const chat = adapterFor('chat');
  const responses = adapterFor('responses');
  return { ...budget, cutOk: (part) => cutOkFor(part, chat) && cutOkFor(part, responses) };
}
