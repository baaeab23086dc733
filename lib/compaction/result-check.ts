// TEMPORARY shim (replaced by the items branch at merge). No-op detection (SPEC C7).
import { isDeepStrictEqual } from 'node:util';
import type { FormatAdapter, Item } from '../items/types.js';
import type { TokenCounter } from '../items/tokens.js';
import type { NoopReason } from './types.js';

export type NoopResultReason = Extract<NoopReason, 'empty_result' | 'unchanged' | 'grown'>;

export function noopReason(input: readonly Item[], result: readonly Item[], counter: TokenCounter, adapter: FormatAdapter): NoopResultReason | null {
  if (result.length === 0) return 'empty_result';
  if (isDeepStrictEqual([...input], [...result])) return 'unchanged';
  if (counter.countItems(result, adapter) > counter.countItems(input, adapter)) return 'grown';
  return null;
}
