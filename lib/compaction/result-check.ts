// No-op detection (SPEC C7): a result that is empty, identical to the input, or larger than
// it must not be written, or every turn would "compact" again and again.
import { isDeepStrictEqual } from 'node:util';
import { countTokens } from '../compressors/tokens.js';
import type { Message } from '../messages.js';
import type { NoopReason } from './types.js';

export type NoopResultReason = Extract<NoopReason, 'empty_result' | 'unchanged' | 'grown'>;

/** Why `result` is a no-op for `input`, or null when it is real progress. */
export function noopReason(input: readonly Message[], result: readonly Message[]): NoopResultReason | null {
  if (result.length === 0) return 'empty_result';
  if (isDeepStrictEqual([...input], [...result])) return 'unchanged';
  if (countTokens(result) > countTokens(input)) return 'grown';
  return null;
}
