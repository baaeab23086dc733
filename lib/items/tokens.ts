// TEMPORARY shim (replaced by the items branch at merge): token counts.
import type { FormatAdapter, Item } from './types.js';

export interface TokenCounter {
  countText(text: string): number;
  countItems(items: readonly Item[], adapter: FormatAdapter): number;
  isWithinLimit(items: readonly Item[], adapter: FormatAdapter, limit: number): boolean;
}

export function estimateItemTokens(item: Item, adapter: FormatAdapter): number {
  return 4 + Math.ceil(Buffer.byteLength(adapter.textOf(item), 'utf8') / 4);
}

export function estimateTokens(items: readonly Item[], adapter: FormatAdapter): number {
  return items.reduce((s, it) => s + estimateItemTokens(it, adapter), 0);
}

let loading: Promise<TokenCounter> | undefined;
export function loadTokenCounter(): Promise<TokenCounter> {
  loading ??= import('gpt-tokenizer/encoding/o200k_base').then((t) => {
    const countText = (s: string) => (s ? t.countTokens(s, { disallowedSpecial: new Set<string>() }) : 0);
    const countItems = (items: readonly Item[], a: FormatAdapter) => items.reduce((n, it) => n + 3 + countText(a.textOf(it)), items.length ? 3 : 0);
    return { countText, countItems, isWithinLimit: (items, a, limit) => countItems(items, a) <= limit };
  });
  return loading;
}
