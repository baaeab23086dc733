import { describe, expect, it } from 'vitest';
import { chatAdapter as chat } from '../../../lib/items/chat.js';
import { SUMMARY_PREFIX, type Item } from '../../../lib/items/types.js';
import {
  chatContentParts,
  chatFixtures,
  chatParallelTools,
  chatRefusal,
  chatUnicodeAndExtras,
  chatWeather,
} from '../../fixtures/transcripts/index.js';

describe('A2: the chat adapter reads chat-completions messages', () => {
  it('A1: roles are the five chat roles; anything else has none', () => {
    expect(chatParallelTools.map((m) => chat.roleOf(m))).toEqual(['developer', 'user', 'assistant', 'tool', 'tool', 'tool', 'assistant']);
    expect(chat.roleOf({ role: 'function', content: 'x' })).toBeUndefined();
    expect(chat.roleOf({ content: 'x' })).toBeUndefined();
  });

  it('A2: instructions are system and developer messages', () => {
    expect(chatContentParts.filter((m) => chat.isInstruction(m))).toEqual([chatContentParts[0]]);
    expect(chat.isInstruction(chatWeather[0]!)).toBe(true);
  });

  it('A2: tool calls: function calls with id, custom calls, legacy function_call; only on assistant messages', () => {
    expect(chat.toolCallsOf(chatWeather[2]!)).toEqual([
      { id: 'call_12345xyz', name: 'get_weather', arguments: '{"location":"Paris, France","unit":"celsius"}' },
    ]);
    expect(chat.toolCallsOf(chatParallelTools[2]!).map((c) => c.id)).toEqual(['call_sf', 'call_tokyo', 'call_paris']);
    expect(chat.toolCallsOf(chatUnicodeAndExtras[5]!)).toEqual([
      { id: 'call_grammar', name: 'sql_query', arguments: "SELECT * FROM seats WHERE train = 'のぞみ 21' AND side = 'window';" },
    ]);
    expect(chat.toolCallsOf(chatUnicodeAndExtras[7]!)).toEqual([{ name: 'send_confirmation', arguments: '{"channel":"email"}' }]);
    expect(
      chat.toolCallsOf({ role: 'user', content: 'x', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '' } }] }),
    ).toEqual([]);
  });

  it('A2: results: a tool message answers its tool_call_id', () => {
    expect(chatParallelTools.map((m) => chat.toolResultIdOf(m))).toEqual([
      undefined,
      undefined,
      undefined,
      'call_sf',
      'call_tokyo',
      'call_paris',
      undefined,
    ]);
  });

  it('A2: textOf covers content parts, refusals, names, tool names and arguments, tool results', () => {
    expect(chat.textOf(chatWeather[2]!)).toBe('get_weather\n{"location":"Paris, France","unit":"celsius"}');
    expect(chat.textOf(chatWeather[3]!)).toContain('"temperature":"22"');
    expect(chat.textOf(chatContentParts[1]!)).toBe('What is in this image? Is the chair damaged?');
    expect(chat.textOf(chatContentParts[3]!)).toBe('warehouse_lead\nHere is the voice note from the warehouse and the inspection report.');
    expect(chat.textOf(chatContentParts[5]!)).toBe('ticket RT-9913 opened');
    expect(chat.textOf(chatRefusal[2]!)).toBe("I'm sorry, I can't share card numbers.");
    expect(chat.textOf(chatRefusal[4]!)).toBe('I can only discuss cards on your own verified account.');
  });

  it('A2: messageTextOf is the message alone, without tool names or arguments', () => {
    const withCall = chatUnicodeAndExtras[3]!;
    expect(chat.messageTextOf(withCall)).toBe('Je cherche les trains disponibles.');
    expect(chat.textOf(withCall)).toContain('search_trains');
  });

  it('C8: a human turn is role user, not synthetic, not a summary', () => {
    expect(chatUnicodeAndExtras.filter((m) => chat.isHumanTurn(m)).map((m) => chat.messageTextOf(m).slice(0, 12))).toEqual([
      'Réserve un t',
      'Merci !',
    ]);
    expect(chat.isHumanTurn({ role: 'user', content: `${SUMMARY_PREFIX} earlier work` })).toBe(false);
    expect(chat.isHumanTurn({ role: 'user', content: [{ type: 'text', text: `  ${SUMMARY_PREFIX} as parts` }] })).toBe(false);
    expect(chat.isHumanTurn({ role: 'assistant', content: 'please continue' })).toBe(false);
  });

  it('A2: the summary is an assistant message and is recognised as one', () => {
    const summary = chat.summaryItem(`${SUMMARY_PREFIX} recap`);
    expect(summary).toEqual({ role: 'assistant', content: `${SUMMARY_PREFIX} recap` });
    expect(chat.isSummary(summary)).toBe(true);
    expect(chatFixtures.flatMap((f) => f.items).some((m) => chat.isSummary(m))).toBe(false);
  });

  it('C8: merging leads with the human text, keeps the scaffolding and its fields, drops the flag', () => {
    const into: Item = { role: 'user', content: 'task list', synthetic: true, name: 'todo' };
    expect(chat.mergeHumanText(into, { role: 'user', content: 'HUMAN' })).toEqual({
      role: 'user',
      content: 'HUMAN\n\ntask list',
      name: 'todo',
    });
    const parts = chat.mergeHumanText(into, chatContentParts[1]!);
    expect(parts.content).toEqual([...(chatContentParts[1]!.content as object[]), { type: 'text', text: 'task list' }]);
    expect(into.synthetic).toBe(true); // never mutated
  });

  it('A2: render shows who spoke, the calls with their arguments and ids, and results by call id', () => {
    expect(chat.render(chatWeather[2]!)).toBe(
      '[assistant] calls get_weather({"location":"Paris, France","unit":"celsius"}) [call_12345xyz]',
    );
    expect(chat.render(chatWeather[3]!)).toMatch(/^\[tool result for call_12345xyz\]\n\{"location"/);
    expect(chat.render(chatUnicodeAndExtras[1]!)).toMatch(/^\[user\] \(scaffolding\)\n/);
    expect(chat.render(chatContentParts[3]!)).toMatch(/^\[user warehouse_lead\]\n/);
    const long = chat.render({
      role: 'assistant',
      content: 'x'.repeat(10_000),
      tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: 'y'.repeat(10_000) } }],
    });
    expect(long.length).toBeLessThan(5_000);
    expect(long).toContain('chars cut');
  });

  it('never throws on odd but stored fields (kept verbatim)', () => {
    const odd: Item[] = [{ role: 'assistant', content: null, tool_calls: [null, 3, { id: 'c' }], function_call: 'x' }, { role: 7 }, {}];
    for (const m of odd) {
      expect(() => [chat.textOf(m), chat.render(m), chat.toolCallsOf(m), chat.toolResultIdOf(m), chat.isHumanTurn(m)]).not.toThrow();
    }
  });
});
