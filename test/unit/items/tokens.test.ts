import { beforeAll, describe, expect, it } from 'vitest';
import { chatAdapter } from '../../../lib/items/chat.js';
import { randomBytes } from 'node:crypto';
import { countBounded, EXACT_TEXT_CHARS, MAX_PIECE_CHARS, mayHoldLongPiece } from '../../../lib/items/linear-count.js';
import { responsesAdapter } from '../../../lib/items/responses.js';
import {
  estimateItemTokens,
  estimateTokens,
  loadTokenCounter,
  tokenCounterFrom,
  TOKENS_PER_ITEM,
  type TokenCounter,
} from '../../../lib/items/tokens.js';
import type { Item } from '../../../lib/items/types.js';
import { agentsSdkRun, allFixtures, chatWeather, longChatTranscript, seeded, singleRunText } from '../../fixtures/transcripts/index.js';

// The reference, loaded the way the product loads it (never a static import, SPEC P4).
type Reference = typeof import('gpt-tokenizer/encoding/o200k_base');
let ref: Reference;
let counter: TokenCounter;
const plain = { disallowedSpecial: new Set<string>() };
const exact = (text: string): number => ref.countTokens(text, plain);

beforeAll(async () => {
  ref = await import('gpt-tokenizer/encoding/o200k_base');
  counter = await loadTokenCounter();
});

function randomLetters(n: number, seed: number): string {
  const rand = seeded(seed);
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(97 + Math.floor(rand() * 26));
  return s;
}

const prose = 'Found it: the export fails because the S3 bucket policy changed on Tuesday. We decided to use invoices-v2.\n';
const normalTexts: Record<string, string> = {
  prose: prose.repeat(500), // under EXACT_TEXT_CHARS: counted exactly
  code: 'export async function run(items: Item[]): Promise<number> {\n  return items.reduce((a, b) => a + b.price * b.qty, 0);\n}\n'.repeat(
    500,
  ),
  unicode: 'ünïcødé 🚀 naïve café — “quotes” … 日本語のテキスト、中文测试。Привет, мир! مرحبا '.repeat(300),
  cjkParagraph: '我们决定使用新的存储桶，而不是恢复旧的策略。导出任务从周二开始失败'.repeat(60), // no ASCII break in 2 K chars: scanned, then exact
  json: JSON.stringify(longChatTranscript(30)),
  specialTokens: 'a literal <|endoftext|> and <|im_start|> in client text',
  indentation: `${' '.repeat(300)}x\n`.repeat(50),
};

describe('A2: exact token counts (o200k_base)', () => {
  it.each(Object.entries(normalTexts))('A2: %s counts exactly as gpt-tokenizer does', (_name, text) => {
    expect(counter.countText(text)).toBe(exact(text));
  });

  it('A2: an empty text is 0 tokens; special-token text counts as plain text instead of throwing', () => {
    expect(counter.countText('')).toBe(0);
    expect(counter.countText('<|endoftext|>')).toBeGreaterThan(1);
  });

  it('A2: a plain chat costs what encodeChat says (3 per message, the role, the content, 3 to prime the reply)', () => {
    const chat = longChatTranscript(6).filter((m) => typeof m.content === 'string' && m.tool_calls === undefined && m.role !== 'tool');
    const direct = ref.encodeChat(
      chat.map((m) => ({ role: m.role as 'user', content: m.content as string })),
      'gpt-4o',
    ).length;
    expect(counter.countItems(chat, chatAdapter)).toBe(direct);
    expect(counter.countItems([], chatAdapter)).toBe(0);
  });

  it('A2: tool names, arguments and results are counted in both formats', () => {
    const call = chatWeather[2]!; // content null, one call
    expect(counter.countItem(call, chatAdapter)).toBe(
      TOKENS_PER_ITEM + exact('assistant') + exact('get_weather\n{"location":"Paris, France","unit":"celsius"}'),
    );
    const fc = agentsSdkRun[3]!;
    const result = agentsSdkRun[4]!;
    expect(counter.countItem(fc, responsesAdapter)).toBe(
      TOKENS_PER_ITEM + exact('assistant') + exact('get_weather\n{"city":"Tokyo","when":"tonight"}'),
    );
    expect(counter.countItem(result, responsesAdapter)).toBe(
      TOKENS_PER_ITEM + exact('tool') + exact('Tokyo tonight: clear, 18°C, 0% rain.'),
    );
  });

  it('A2: every fixture counts more than its framing (nothing the model sees is missed)', () => {
    for (const f of allFixtures) {
      const adapter = f.format === 'chat' ? chatAdapter : responsesAdapter;
      const withText = f.items.filter((i) => adapter.textOf(i) !== '');
      for (const item of withText) expect(counter.countItem(item, adapter), JSON.stringify(item)).toBeGreaterThan(TOKENS_PER_ITEM + 1);
    }
  });

  it('C7 support: isWithinLimit agrees with countItems at the boundary', () => {
    const items = longChatTranscript(20);
    const total = counter.countItems(items, chatAdapter);
    expect(counter.isWithinLimit(items, chatAdapter, total)).toBe(true);
    expect(counter.isWithinLimit(items, chatAdapter, total - 1)).toBe(false);
    expect(counter.isWithinLimit([], chatAdapter, 0)).toBe(true);
  });

  it('loadTokenCounter is loaded once and shared', async () => {
    expect(await loadTokenCounter()).toBe(counter);
  });
});

describe('issue 11 #3: counting is linear in the input length', () => {
  it('the pre-scan flags only texts that can hold a piece longer than the bound', () => {
    expect(mayHoldLongPiece(normalTexts.prose!)).toBe(false);
    expect(mayHoldLongPiece(normalTexts.code!)).toBe(false);
    expect(mayHoldLongPiece(singleRunText(MAX_PIECE_CHARS + 1))).toBe(true);
    expect(mayHoldLongPiece(`=${'\n/'.repeat(2_000)}`)).toBe(true); // one punctuation piece with trailing newlines
    expect(mayHoldLongPiece(' '.repeat(5_000))).toBe(true);
  });

  it('a long single run is counted within 2 tokens per 1 K chunk of the exact count', () => {
    for (let seed = 1; seed <= 8; seed++) {
      const text = randomLetters(5_000 + seed * 97, seed);
      const boundaries = Math.ceil(text.length / MAX_PIECE_CHARS) - 1;
      expect(Math.abs(counter.countText(text) - exact(text))).toBeLessThanOrEqual(2 * boundaries);
    }
    const cjkRun = '我们决定使用新的存储桶而不是恢复旧的策略导出任务从周二开始失败'.repeat(200); // no punctuation: one piece
    for (const text of [singleRunText(6_000), 'a'.repeat(6_000), '-'.repeat(6_000), ' '.repeat(6_000), cjkRun.slice(0, 6_000)]) {
      expect(Math.abs(counter.countText(text) - exact(text))).toBeLessThanOrEqual(2 * 5);
    }
  });

  it('a text with a long run elsewhere is still exact outside the run (cut only at piece boundaries)', () => {
    const run = randomLetters(3_000, 99);
    const text = `${prose.repeat(20)} ${run} ${prose.repeat(20)}`;
    expect(counter.countText(text) - counter.countText(` ${run}`)).toBe(exact(text) - exact(` ${run}`));
  });

  it('the tokenizer sees every character of a text up to 64 K, and at most 64 K (+ surrogate fixes) of a longer one', () => {
    const split = new RegExp(/\S+|\s+/gu);
    let seen = 0;
    const recording = (t: string) => ((seen += t.length), Math.ceil(t.length / 4));
    for (const length of [EXACT_TEXT_CHARS, EXACT_TEXT_CHARS + 1, 380 * 1024, 3_000_000]) {
      seen = 0;
      countBounded(singleRunText(length), recording, split);
      expect(seen, `${length}`).toBe(Math.min(length, EXACT_TEXT_CHARS));
    }
    // The repro of the issue (a tool message of "abcdefghij" x 20000) is counted too, and sanely.
    expect(counter.countItem({ role: 'tool', tool_call_id: 'c1', content: singleRunText(200_000) }, chatAdapter)).toBeGreaterThan(30_000);
  });

  it.each([
    ['base64 (a file in a tool call)', () => randomBytes(270_000).toString('base64'), 0.02],
    ['prose', () => prose.repeat(3_000), 0.01],
    ['minified JSON', () => JSON.stringify(longChatTranscript(600)), 0.02],
    ['prose then base64 then code', () => `${prose.repeat(700)}${randomBytes(60_000).toString('base64')}${normalTexts.code!}`, 0.03],
  ])(
    'a text longer than 64 K (%s) is counted from samples within a few percent of exact',
    (_name, make, tolerance) => {
      const text = make();
      expect(text.length).toBeGreaterThan(EXACT_TEXT_CHARS);
      const truth = exact(text);
      expect(Math.abs(counter.countText(text) - truth) / truth).toBeLessThan(tolerance);
    },
    60_000,
  );

  it('L5/C9: each item is counted once per counter, however often a compaction asks', () => {
    const texts: string[] = [];
    const once = tokenCounterFrom((t) => (texts.push(t), t.length));
    const items: Item[] = [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'bb' },
    ];
    const first = once.countItems(items, chatAdapter);
    expect(once.countItems(items, chatAdapter)).toBe(first);
    expect(once.isWithinLimit(items, chatAdapter, first)).toBe(true);
    expect(texts.filter((t) => t === 'bb')).toHaveLength(1);
  });
});

describe('A2: the estimate (no tokenizer, synchronous)', () => {
  it('is an upper-ish bound of the exact count for everyday text, and covers tool arguments and results', () => {
    for (const [name, items, adapter] of [
      ['chat transcript', longChatTranscript(20), chatAdapter],
      ['SDK run', agentsSdkRun, responsesAdapter],
      ['prose', [{ role: 'user', content: normalTexts.prose! }], chatAdapter],
      ['code', [{ role: 'user', content: normalTexts.code! }], chatAdapter],
    ] as const) {
      const estimate = estimateTokens(items, adapter);
      const count = counter.countItems(items, adapter);
      expect(estimate, name).toBeGreaterThanOrEqual(count);
      expect(estimate, name).toBeLessThan(count * 2);
    }
  });

  it('is 0 for no items and grows with arguments the model sees', () => {
    expect(estimateTokens([], chatAdapter)).toBe(0);
    const small: Item = { type: 'function_call', callId: 'c', name: 'f', arguments: '{}' };
    const big: Item = { ...small, arguments: JSON.stringify({ rows: 'x'.repeat(3_000) }) };
    expect(estimateItemTokens(big, responsesAdapter) - estimateItemTokens(small, responsesAdapter)).toBeGreaterThanOrEqual(1_000);
  });
});
