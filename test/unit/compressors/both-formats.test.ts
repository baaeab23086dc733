// The extractive engine on both item formats (SPEC A2): pairing kept, the summary an item of the
// session's format, the human anchor recognised, a pending call kept, the result valid input.
import { assistant } from '@openai/agents-core';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExtractiveCompressor } from '../../../lib/compressors/extractive.js';
import { adapterFor } from '../../../lib/items/adapters.js';
import { loadTokenCounter, type TokenCounter } from '../../../lib/items/tokens.js';
import type { Item, ItemFormat } from '../../../lib/items/types.js';
import { validateItems } from '../../../lib/items/validate.js';
import {
  agentsSdkPendingCall,
  allFixtures,
  longChatTranscript,
  longResponsesTranscript,
  responsesMixedParts,
} from '../../fixtures/transcripts/index.js';
import { expectPairsKept } from './pairing-check.js';

const engine = new ExtractiveCompressor();
let counter: TokenCounter;
beforeAll(async () => {
  counter = await loadTokenCounter();
});

async function compact(format: ItemFormat, items: Item[], keepLast?: number): Promise<Item[]> {
  const { items: out } = await engine.compress({ format, items }, keepLast === undefined ? {} : { keepLast });
  return out;
}

describe('A2: extractive compaction in both formats', () => {
  it.each(allFixtures.map((f) => [f.name, f] as const))(
    'A2: %s: for every keepLast, no call loses its result and the result is valid input',
    async (_n, f) => {
      const adapter = adapterFor(f.format);
      for (let keepLast = 0; keepLast <= f.items.length; keepLast++) {
        const out = await compact(f.format, f.items, keepLast);
        expectPairsKept(f.items, out, adapter);
        expect(validateItems(f.format, out).ok).toBe(true);
      }
    },
  );

  it.each([
    ['chat', longChatTranscript(30)],
    ['responses', longResponsesTranscript(30)],
  ] as const)(
    'A2: a long %s transcript shrinks to instructions + first human + one summary of its format + tail',
    async (format, items) => {
      const adapter = adapterFor(format);
      const out = await compact(format, items, 6);
      expect(counter.countItems(out, adapter)).toBeLessThan(counter.countItems(items, adapter) / 4);
      expect(out[0]).toEqual(items[0]);
      expect(out[1]).toEqual(items[1]); // the first human turn, verbatim
      const summaries = out.filter((i) => adapter.isSummary(i));
      expect(summaries).toHaveLength(1);
      expect(out[2]).toBe(summaries[0]);
      const text = adapter.messageTextOf(summaries[0]!);
      expect(summaries[0]).toEqual(adapter.summaryItem(text));
      if (format === 'responses') expect(summaries[0]).toEqual(assistant(text)); // the SDK's own assistant item
      expect(text).toMatch(/Summary of \d+ earlier messages/);
      expect(text).toContain('delete the duplicates of shard 20'); // open tasks survive
      expect(text).toMatch(/query_ledger|read_file|search_docs|run_tests|get_weather/); // tools by name
      expectPairsKept(items, out, adapter);
    },
  );

  it('A2: a call whose result has not arrived yet is kept verbatim in the tail, even with keepLast 0', async () => {
    const out = await compact('responses', agentsSdkPendingCall, 0);
    expect(out.at(-1)).toEqual(agentsSdkPendingCall.at(-1));
    expectPairsKept(agentsSdkPendingCall, out, adapterFor('responses'));
  });

  it('A2: a pending chat call (the tool message is still being appended) is kept too', async () => {
    const items = [
      ...longChatTranscript(8),
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_pending', type: 'function', function: { name: 'slow_job', arguments: '{}' } }],
      },
    ];
    const out = await compact('chat', items, 0);
    expect(out.at(-1)).toEqual(items.at(-1));
    expect(out.length).toBeLessThan(items.length);
  });

  it('C8 A2: responses: synthetic scaffolding is not taken as the first human turn; the real one is kept', async () => {
    const items = [...responsesMixedParts, ...longResponsesTranscript(6).slice(1)];
    const out = await compact('responses', items, 3);
    expect(out).toContainEqual(responsesMixedParts[2]); // the human turn
    expect(out).not.toContainEqual(responsesMixedParts[1]); // the scaffolding went into the summary
    expect(out.filter((i) => adapterFor('responses').isHumanTurn(i))[0]).toEqual(responsesMixedParts[2]);
  });

  it('A2 (property): random responses transcripts, both spellings, parallel calls, reasoning, hosted calls, a pending call', async () => {
    const turn = fc.oneof(
      fc.record({ kind: fc.constant('user' as const), text: fc.string({ maxLength: 20 }) }),
      fc.record({ kind: fc.constant('say' as const), text: fc.string({ maxLength: 20 }) }),
      fc.record({ kind: fc.constant('hosted' as const) }),
      fc.record({
        kind: fc.constant('calls' as const),
        calls: fc.integer({ min: 1, max: 3 }),
        sdk: fc.boolean(),
        reasoning: fc.boolean(),
        interleave: fc.boolean(),
      }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(turn, { maxLength: 20 }),
        fc.integer({ min: 0, max: 10 }),
        fc.boolean(),
        async (turns, keepLast, pending) => {
          const items: Item[] = [{ role: 'developer', content: 'dev' }];
          turns.forEach((t, i) => {
            if (t.kind === 'user') items.push({ role: 'user', content: `ask ${t.text}` });
            else if (t.kind === 'say')
              items.push({
                type: 'message',
                role: 'assistant',
                status: 'completed',
                content: [{ type: 'output_text', text: `note ${t.text}` }],
              });
            else if (t.kind === 'hosted')
              items.push({ type: 'web_search_call', id: `ws_${i}`, status: 'completed', action: { type: 'search', query: 'q' } });
            else {
              if (t.reasoning) items.push({ type: 'reasoning', id: `rs_${i}`, summary: [{ type: 'summary_text', text: 'think' }] });
              const ids = Array.from({ length: t.calls }, (_, j) => `c${i}_${j}`);
              const call = (id: string): Item =>
                t.sdk
                  ? { type: 'function_call', callId: id, name: 'f', arguments: '{}' }
                  : { type: 'function_call', call_id: id, name: 'g', arguments: '{}' };
              const result = (id: string): Item =>
                t.sdk
                  ? { type: 'function_call_result', callId: id, name: 'f', status: 'completed', output: 'r' }
                  : { type: 'function_call_output', call_id: id, output: 'r' };
              if (t.interleave) for (const id of ids) items.push(call(id), result(id));
              else items.push(...ids.map(call), ...ids.map(result));
            }
          });
          if (pending) items.push({ type: 'function_call', callId: 'c_pending', name: 'wait', arguments: '{}' });
          const out = await compact('responses', items, keepLast);
          const adapter = adapterFor('responses');
          expectPairsKept(items, out, adapter);
          // A reasoning item and the item it produced are kept together, adjacent, or summarized together.
          const kept = out.map((item) => JSON.stringify(item));
          items.forEach((item, k) => {
            if (!adapter.bindsToNext(item)) return;
            const at = kept.indexOf(JSON.stringify(item));
            const next = kept.indexOf(JSON.stringify(items[k + 1]));
            expect(at >= 0).toBe(next >= 0);
            if (at >= 0) expect(next).toBe(at + 1);
          });
          expect(validateItems('responses', out).ok).toBe(true);
        },
      ),
      { numRuns: 300, seed: 4243 },
    );
  });
});
