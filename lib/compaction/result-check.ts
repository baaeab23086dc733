// No-op detection (SPEC C7): a result that is empty, identical to the input, or larger than
// it must not be written, or every turn would "compact" again and again.
import { isDeepStrictEqual } from 'node:util';
import type { TokenCounter } from '../items/tokens.js';
import type { FormatAdapter, Item } from '../items/types.js';

/** The no-op reasons a result itself can give (the attempt adds its own, e.g. aborted). */
export type NoopResultReason = 'empty_result' | 'unchanged' | 'grown';

/** Why `result` is a no-op for `input`, or null when it is real progress. */
export function noopReason(
  input: readonly Item[],
  result: readonly Item[],
  counter: TokenCounter,
  adapter: FormatAdapter,
): NoopResultReason | null {
  if (result.length === 0) return 'empty_result';
  if (isDeepStrictEqual([...input], [...result])) return 'unchanged';
  // Grown: input < result, i.e. input fits within result - 1 (stops counting a long input early).
  if (counter.isWithinLimit(input, adapter, counter.countItems(result, adapter) - 1)) return 'grown';
  return null;
}
