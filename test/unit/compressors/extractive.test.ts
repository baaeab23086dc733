import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExtractiveCompressor, extractiveCompress } from '../../../lib/compressors/extractive.js';
import type { CompressOptions, CompressResult } from '../../../lib/compressors/types.js';
import { chatAdapter } from '../../../lib/items/chat.js';
import { countBounded, EXACT_TEXT_CHARS } from '../../../lib/items/linear-count.js';
import { loadTokenCounter, tokenCounterFrom, type TokenCounter } from '../../../lib/items/tokens.js';
import type { Item } from '../../../lib/items/types.js';
import { agentSession, longSession, toolCall } from './transcripts.js';

const engine = new ExtractiveCompressor();
let counter: TokenCounter;
beforeAll(async () => {
  counter = await loadTokenCounter();
});

const compress = (items: Item[], options: CompressOptions): Promise<CompressResult> => engine.compress({ format: 'chat', items }, options);
const countTokens = (items: Item[]): number => counter.countItems(items, chatAdapter);

function summaryOf(items: Item[]): Item {
  const summaries = items.filter((m) => chatAdapter.isSummary(m));
  expect(summaries).toHaveLength(1);
  return summaries[0]!;
}

const textOf = (item: Item): string => chatAdapter.messageTextOf(item);

describe('ExtractiveCompressor (chat)', () => {
  it('C6: declares only keepLast and targetTokens', () => {
    expect(engine.acceptedOptions).toEqual(['keepLast', 'targetTokens']);
  });

  it('is deterministic: the same input gives the same output', async () => {
    const a = await compress(agentSession(), { keepLast: 4 });
    const b = await new ExtractiveCompressor().compress({ format: 'chat', items: agentSession() }, { keepLast: 4 });
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
    expect(a.items.length).toBeLessThan(agentSession().length);
  });

  it('C8: keeps the system prompt, the first human turn and the last K messages verbatim, in order', async () => {
    const input = agentSession();
    const { items: messages } = await compress(input, { keepLast: 3 });
    expect(messages[0]).toEqual(input[0]);
    expect(messages[1]).toEqual(input[1]);
    expect(messages.slice(-3)).toEqual(input.slice(-3));
    expect(messages).toHaveLength(1 + 1 + 1 + 3);
  });

  it('C8: the summary is one assistant message starting with the prefix, placed after the first human turn', async () => {
    const { items: messages } = await compress(agentSession(), { keepLast: 3 });
    const summary = summaryOf(messages);
    expect(messages[2]).toBe(summary);
    expect(summary.role).toBe('assistant');
    expect(summary.synthetic).toBeUndefined();
  });

  it('summarizes the middle: tool names, open tasks, decisions and facts; closed tasks and tool-output TODOs are left out', async () => {
    const { items: messages } = await compress(agentSession(), { keepLast: 3 });
    const text = textOf(summaryOf(messages));
    for (const tool of ['read_file', 'edit_file', 'run_tests', 'run_job']) expect(text).toContain(tool);
    expect(text).toContain('tell finance the exports were delayed');
    expect(text).toContain('add an alarm on export failures');
    expect(text).toContain('re-run the export for Tuesday and Wednesday');
    expect(text).toContain('clean up the old bucket after a week');
    expect(text).toContain('We decided to use the new bucket invoices-v2');
    expect(text).toContain('the deadline for the fix is Friday');
    expect(text).not.toContain('[ ] update the bucket name'); // checked off later in the middle
    expect(text).not.toContain('this is code, not a task'); // a TODO inside tool output
  });

  it('C7: the result has fewer tokens than the input', async () => {
    const input = longSession(20);
    const { items: messages } = await compress(input, {});
    expect(countTokens(messages)).toBeLessThan(countTokens(input) / 2);
  });

  it('respects targetTokens by shrinking the summary lists, keeping the most recent items', async () => {
    const input = longSession(40);
    const roomy = await compress(input, {});
    const target = countTokens(roomy.items) - 150;
    const { items: messages, warnings } = await compress(input, { targetTokens: target });
    expect(warnings).toBeUndefined();
    expect(countTokens(messages)).toBeLessThanOrEqual(target);
    const text = textOf(summaryOf(messages));
    expect(text).toContain('more omitted');
    expect(text).toContain('delete the duplicates of shard 39');
    expect(text).not.toContain('delete the duplicates of shard 0\n');
    expect(textOf(summaryOf(roomy.items)).length).toBeGreaterThan(text.length);
  });

  it('warns when the messages kept verbatim alone exceed targetTokens', async () => {
    const { items: messages, warnings } = await compress(longSession(5), { targetTokens: 10 });
    expect(textOf(summaryOf(messages)).split('\n')[0]).toMatch(/^\[CONTEXT COMPACTION\] Summary of \d+ earlier messages/);
    expect(warnings?.[0]).toMatch(/exceed targetTokens \(10\)/);
  });

  it('C7: nothing to compact (too few messages) returns the input unchanged', async () => {
    const input = agentSession().slice(0, 4);
    const { items: messages, warnings } = await compress(input, { keepLast: 6 });
    expect(messages).toEqual(input);
    expect(warnings).toBeUndefined();
  });

  it('C7: a middle too small to beat its own summary returns the input unchanged', async () => {
    const input: Item[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'k' },
      { role: 'assistant', content: 'latest' },
    ];
    const { items: messages } = await compress(input, { keepLast: 1 });
    expect(messages).toEqual(input);
  });

  it('does not mutate its input', async () => {
    const input = agentSession();
    const snapshot = structuredClone(input);
    await compress(input, { keepLast: 2 });
    expect(input).toEqual(snapshot);
  });

  it('C8: synthetic user scaffolding is not taken as the first human turn', async () => {
    const input: Item[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'Task list snapshot: 1. a 2. b', synthetic: true },
      ...agentSession().slice(1),
    ];
    const { items: messages } = await compress(input, { keepLast: 2 });
    expect(messages[1]).toEqual(agentSession()[1]);
  });

  it('carries an earlier summary forward when compacting again', async () => {
    const first = await compress(longSession(3), { keepLast: 2 });
    const continued: Item[] = [
      ...first.items,
      { role: 'user', content: 'Next, audit the refunds table.' },
      { role: 'assistant', content: 'Auditing refunds. We decided to skip archived refunds.' },
      { role: 'user', content: 'ok' },
      { role: 'assistant', content: 'done' },
    ];
    const second = await compress(continued, { keepLast: 2 });
    const text = textOf(summaryOf(second.items));
    expect(text).toContain('delete the duplicates of shard 2');
    expect(text).toContain('We decided to skip archived refunds');
    expect(text).toMatch(/query_ledger ×3/);
    const firstCount = Number(/Summary of (\d+)/.exec(textOf(summaryOf(first.items)))?.[1]);
    expect(text).toContain(`Summary of ${firstCount + 4} earlier messages`);
  });

  it('A2: never splits an assistant tool call from its tool results, for any keepLast and transcript', async () => {
    // Random transcripts of turns: plain messages and assistant calls followed by all their results.
    const turn = fc.oneof(
      fc.record({ kind: fc.constant('user' as const), text: fc.string({ maxLength: 30 }) }),
      fc.record({ kind: fc.constant('say' as const), text: fc.string({ maxLength: 30 }) }),
      fc.record({ kind: fc.constant('tools' as const), calls: fc.integer({ min: 1, max: 3 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(turn, { maxLength: 25 }), fc.integer({ min: 0, max: 12 }), async (turns, keepLast) => {
        const input: Item[] = [{ role: 'system', content: 'sys' }];
        turns.forEach((t, i) => {
          if (t.kind === 'user') input.push({ role: 'user', content: `ask ${t.text}` });
          else if (t.kind === 'say') input.push({ role: 'assistant', content: `note ${t.text}` });
          else {
            const ids = Array.from({ length: t.calls }, (_, j) => `t${i}-${j}`);
            input.push({ role: 'assistant', content: '', tool_calls: ids.map((id) => toolCall(id, `tool${j(id)}`)) });
            for (const id of ids) input.push({ role: 'tool', tool_call_id: id, content: `result ${id}` });
          }
        });
        const { items: messages } = await compress(input, { keepLast });
        const called = new Set<string>();
        const answered = new Set<string>();
        for (const m of messages) {
          for (const c of (m.tool_calls as { id: string }[] | undefined) ?? []) called.add(c.id);
          if (m.role === 'tool') {
            expect(called.has(m.tool_call_id as string)).toBe(true);
            answered.add(m.tool_call_id as string);
          }
        }
        expect([...called].sort()).toEqual([...answered].sort());
      }),
      { numRuns: 300, seed: 4242 },
    );
  });
});

function j(id: string): string {
  return id.slice(-1);
}

describe('ExtractiveCompressor on large tool payloads (L5, C5, C9; found by the adversarial pass)', () => {
  it('L5/C9: a 2.9 MB base64-heavy transcript hands the tokenizer a bounded amount of text, each item once', () => {
    // Base64 costs the tokenizer about 2 µs a character: counted whole, and once per question,
    // this transcript blocked the event loop for 8 s, past the lease refresher's interval on a Lambda.
    const b64 = (seed: number) => Buffer.alloc(270_000, seed).toString('base64');
    const items: Item[] = [
      { role: 'user', content: 'Please archive these files.' },
      ...Array.from({ length: 4 }, (_, i): Item[] => [
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'upload', arguments: b64(i) } }],
        },
        { role: 'tool', tool_call_id: `c${i}`, content: b64(i + 10) },
      ]).flat(),
      { role: 'assistant', content: 'All four files are archived.' },
    ];
    let seen = 0;
    const split = new RegExp(/\S+|\s+/gu);
    const recording = tokenCounterFrom((t) => countBounded(t, (s) => ((seen += s.length), Math.ceil(s.length / 2)), split));
    const out = extractiveCompress({ format: 'chat', items }, { keepLast: 2 }, recording);
    expect(out.items.length).toBeLessThan(items.length);
    // 8 payloads of 360 K characters: at most 64 K of each reaches the tokenizer, and only once.
    expect(EXACT_TEXT_CHARS).toBe(65_536);
    expect(seen).toBeLessThan(8 * 65_536 + 200_000);
  });
});
