// Phase 2, shared by both drivers: is a replacement for the snapshot worth writing? C7 on the raw
// result, then the human anchor (C8), then C7 again: restoring the anchor can rebuild the input.
import { loadTokenCounter } from '../../items/tokens.js';
import type { FormatAdapter, Item } from '../../items/types.js';
import { restoreHumanAnchor } from '../human-anchor.js';
import { noopReason } from '../result-check.js';
import type { Ending } from './open.js';

export async function checkReplacement(
  snapshot: readonly Item[],
  replacement: readonly Item[],
  adapter: FormatAdapter,
  verbatim = false,
): Promise<{ anchored: Item[] } | Ending> {
  if (replacement.length === 0) return { ended: 'noop', reason: 'empty_result' };
  // X2: a history replaced as the caller wrote it (the SDK's replaceHistoryWithCompaction): no
  // anchor is restored and a larger result is written too; only an unchanged one writes nothing.
  if (verbatim)
    return JSON.stringify(replacement) === JSON.stringify(snapshot)
      ? { ended: 'noop', reason: 'unchanged' }
      : { anchored: [...replacement] };
  const anchored = restoreHumanAnchor(replacement, snapshot, adapter).items;
  const why = noopReason(snapshot, anchored, await loadTokenCounter(), adapter);
  if (why) return { ended: 'noop', reason: why };
  return { anchored };
}
