import { describe, expect, it } from 'vitest';
import { planCompaction } from '../../../lib/compressors/transcript-plan.js';
import { chatAdapter } from '../../../lib/items/chat.js';
import { responsesAdapter } from '../../../lib/items/responses.js';
import type { Item } from '../../../lib/items/types.js';
import { chatParallelTools, longChatTranscript } from '../../fixtures/transcripts/index.js';

const say = (text: string): Item => ({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] });
const ask = (text: string): Item => ({ role: 'user', content: text });
const fc = (id: string): Item => ({ type: 'function_call', call_id: id, name: 'f', arguments: '{}' });
const out = (id: string): Item => ({ type: 'function_call_output', call_id: id, output: 'ok' });

describe('A2: the transcript plan keeps calls with their results', () => {
  it('A2: chat: a tail that would start inside a parallel-call group starts at the calling assistant message', () => {
    const items = [...longChatTranscript(3), ...chatParallelTools.slice(1)];
    const plan = planCompaction(items, chatAdapter, 3)!; // the last 3 would start at the third tool message
    expect(plan.tail).toEqual(chatParallelTools.slice(2));
  });

  it('A2: responses: results after a group of calls pull the whole group into the tail', () => {
    const items = [ask('a'), say('b'), ask('c'), say('d'), fc('x'), fc('y'), out('x'), say('e'), out('y'), say('f')];
    const plan = planCompaction(items, responsesAdapter, 2)!;
    expect(plan.tail).toEqual(items.slice(4));
  });

  it('A2: a reasoning item goes where its call goes', () => {
    const reasoning: Item = { type: 'reasoning', id: 'rs_1', summary: [] };
    const items = [ask('a'), say('b'), ask('c'), say('d'), reasoning, fc('x'), out('x'), say('e')];
    const plan = planCompaction(items, responsesAdapter, 3)!;
    expect(plan.tail).toEqual(items.slice(4));
  });

  it('A2: an unanswered call deep in the transcript keeps everything from it on (its result may still be appended)', () => {
    const items = [ask('a'), say('b'), ask('b2'), say('b3'), fc('waiting'), ask('c'), say('d'), ask('e'), say('f'), ask('g'), say('h')];
    const plan = planCompaction(items, responsesAdapter, 2)!;
    expect(plan.tail).toEqual(items.slice(4));
    expect(plan.middle).toEqual(items.slice(1, 4));
  });

  it('C7: nothing left to summarize (a pending call at the start) is no plan', () => {
    const items = [ask('a'), fc('waiting'), ...longChatTranscript(3).slice(1)];
    expect(planCompaction(items, responsesAdapter, 0)).toBeUndefined();
  });

  it('A2: system and developer instructions lead the head; a developer message later is middle', () => {
    const items: Item[] = [
      { role: 'system', content: 's' },
      { role: 'developer', content: 'd' },
      ask('a'),
      say('b'),
      { role: 'developer', content: 'later' },
      say('c'),
      ask('e'),
    ];
    const plan = planCompaction(items, responsesAdapter, 1)!;
    expect(plan.head).toEqual(items.slice(0, 2));
    expect(plan.firstHuman).toEqual(items[2]);
    expect(plan.middle).toEqual([items[3], items[4], items[5]]);
  });
});
