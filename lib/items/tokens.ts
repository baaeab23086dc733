// Token counts of items, exact or estimated, and which is which:
//
// - EXACT: `TokenCounter` (from `loadTokenCounter()`): o200k_base, the encoding of the current
//   OpenAI models (gpt-4o, gpt-4.1, o-series, gpt-5), via gpt-tokenizer. Every text the model
//   sees (adapter.textOf: content parts, tool names and arguments, tool results, reasoning
//   summaries) plus the chat format's framing: 3 tokens per item, the role, 3 to prime the
//   reply. For a plain chat this equals gpt-tokenizer's encodeChat. Exact as far as text goes:
//   images, audio, files and encrypted reasoning cost tokens we cannot see and count 0, and a
//   single unbroken run longer than 1 K characters is counted in chunks (a few tokens off per
//   chunk) so counting stays linear, and a text longer than 64 K characters (base64 files in
//   tool calls, pasted logs) from 64 samples of 1 K, scaled (under 1% off measured), so one text costs
//   the tokenizer at most 64 K characters (about 150 ms of base64 here; linear-count.ts). Each item is counted once per counter (a
//   compaction asks about the same items several times). Used by the engines and the C7 check.
// - ESTIMATE: `estimateTokens` / `estimateItemTokens`: synchronous, no tokenizer: UTF-8 bytes of
//   the same text / 3 plus the same framing. Measured o200k bytes per token: English prose 4.8,
//   Cyrillic 7.6, CJK 4.4, code 3.4, JSON 2.9, so this is an upper-ish bound for everyday text;
//   dense data undercounts (random letters 2.0, base64 1.4 bytes per token). Used for the running
//   size kept on the session record and the after-turn "is compaction due" threshold, where a
//   compaction that comes a little early or late is fine.
//
// The tokenizer's 2.6 MB table is loaded only by `loadTokenCounter()`, through a dynamic import
// that esbuild splits into its own chunk: code that never compacts never loads it.
import { countBounded } from './linear-count.js';
import type { FormatAdapter, Item } from './types.js';

/** Chat framing: <|im_start|>{role}<|im_sep|>{content}<|im_end|> = 3 tokens around each item. */
export const TOKENS_PER_ITEM = 3;
/** Every reply is primed with <|im_start|>assistant<|im_sep|>. */
export const TOKENS_PER_REPLY_PRIMER = 3;
/** UTF-8 bytes per token assumed by the estimate (o200k's average is higher for prose and code). */
export const ESTIMATE_BYTES_PER_TOKEN = 3;
/** The tokenizer's piece cache (LRU): bounded so adversarial unique text cannot grow it to 100 K long entries. */
const MERGE_CACHE_ENTRIES = 20_000;

/** Plain functions (no `this`): pass `counter.countText` around freely. */
export interface TokenCounter {
  readonly countText: (text: string) => number;
  /** One item inside a request: framing, role and every text the model sees in it. */
  readonly countItem: (item: Item, adapter: FormatAdapter) => number;
  /** A whole request of these items (reply primer included; 0 for none). */
  readonly countItems: (items: readonly Item[], adapter: FormatAdapter) => number;
  /** countItems(items) <= limit, counting only until the limit is passed. */
  readonly isWithinLimit: (items: readonly Item[], adapter: FormatAdapter, limit: number) => boolean;
}

/** Item-level counting over any exact text counter; each item is counted once (items are never mutated). */
export function tokenCounterFrom(countText: (text: string) => number): TokenCounter {
  const known = new WeakMap<FormatAdapter, WeakMap<Item, number>>();
  const countItem = (item: Item, adapter: FormatAdapter): number => {
    let byItem = known.get(adapter);
    if (!byItem) known.set(adapter, (byItem = new WeakMap()));
    let n = byItem.get(item);
    if (n === undefined) {
      n = TOKENS_PER_ITEM + countText(adapter.roleOf(item) ?? '') + countText(adapter.textOf(item));
      byItem.set(item, n);
    }
    return n;
  };
  return {
    countText,
    countItem,
    countItems(items, adapter) {
      let total = items.length === 0 ? 0 : TOKENS_PER_REPLY_PRIMER;
      for (const item of items) total += countItem(item, adapter);
      return total;
    },
    isWithinLimit(items, adapter, limit) {
      let total = items.length === 0 ? 0 : TOKENS_PER_REPLY_PRIMER;
      if (total > limit) return false;
      for (const item of items) {
        total += countItem(item, adapter);
        if (total > limit) return false;
      }
      return true;
    },
  };
}

let loading: Promise<TokenCounter> | undefined;

/** The exact counter; the first call loads the tokenizer (once per process, shared by every caller). */
export function loadTokenCounter(): Promise<TokenCounter> {
  loading ??= loadO200k().catch((err: unknown) => {
    loading = undefined; // a failed import may be retried
    throw err;
  });
  return loading;
}

/** Whether anything asked for the tokenizer yet (the lazy-loading test reads it). */
export function tokenizerRequested(): boolean {
  return loading !== undefined;
}

async function loadO200k(): Promise<TokenCounter> {
  const [encoding, params] = await Promise.all([
    import('gpt-tokenizer/encoding/o200k_base'),
    import('gpt-tokenizer/encodingParams/constants'),
  ]);
  encoding.setMergeCacheSize(MERGE_CACHE_ENTRIES);
  // Transcripts are client text: a literal "<|endoftext|>" counts as plain text instead of throwing.
  const plainText = { disallowedSpecial: new Set<string>() };
  const exact = (text: string): number => encoding.countTokens(text, plainText);
  return tokenCounterFrom((text) => (text ? countBounded(text, exact, params.O200K_TOKEN_SPLIT_REGEX) : 0));
}

/** Estimated tokens of one item (see the module comment): framing + role + UTF-8 bytes / 3. */
export function estimateItemTokens(item: Item, adapter: FormatAdapter): number {
  return TOKENS_PER_ITEM + 1 + Math.ceil(Buffer.byteLength(adapter.textOf(item), 'utf8') / ESTIMATE_BYTES_PER_TOKEN);
}

/** Estimated tokens of a request of these items (0 for none). */
export function estimateTokens(items: readonly Item[], adapter: FormatAdapter): number {
  let total = items.length === 0 ? 0 : TOKENS_PER_REPLY_PRIMER;
  for (const item of items) total += estimateItemTokens(item, adapter);
  return total;
}
