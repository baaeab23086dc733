import { beforeAll, describe, expect, it } from 'vitest';
import { noopReason } from '../../../lib/compaction/result-check.js';
import { chatAdapter } from '../../../lib/items/chat.js';
import { responsesAdapter } from '../../../lib/items/responses.js';
import { loadTokenCounter, type TokenCounter } from '../../../lib/items/tokens.js';
import { SUMMARY_PREFIX, type Item } from '../../../lib/items/types.js';
import { agentsSdkRun } from '../../fixtures/transcripts/index.js';

let counter: TokenCounter;
beforeAll(async () => {
  counter = await loadTokenCounter();
});

const input: Item[] = Array.from({ length: 20 }, (_, i) => ({ role: 'user', content: `message number ${i}` }));
const check = (result: Item[], from: Item[] = input) => noopReason(from, result, counter, chatAdapter);

describe('noopReason (chat)', () => {
  it('C7: empty result', () => expect(check([])).toBe('empty_result'));
  it('C7: an equal copy is unchanged', () => expect(check(structuredClone(input))).toBe('unchanged'));
  it('C7: a result with more tokens than the input is grown', () => {
    expect(check([...input, { role: 'assistant', content: 'more' }])).toBe('grown');
  });
  it('C7: fewer messages but more tokens is still grown', () => {
    expect(check([{ role: 'user', content: 'word '.repeat(500) }])).toBe('grown');
  });
  it('C7: exactly as many tokens is not grown (and not unchanged): progress by the rules', () => {
    const same: Item[] = input.map((m, i) => ({ ...m, content: `message number ${(i + 1) % 20}` }));
    expect(counter.countItems(same, chatAdapter)).toBe(counter.countItems(input, chatAdapter));
    expect(check(same)).toBeNull();
  });
  it('C7: a smaller result is progress', () => {
    expect(
      check([
        { role: 'user', content: `${SUMMARY_PREFIX} summary` },
        { role: 'user', content: 'tail' },
      ]),
    ).toBeNull();
  });
  it('C7: same roles, different content is not unchanged', () => {
    expect(check(input.map((m) => ({ ...m, content: 'x' })))).toBeNull();
  });
});

describe('noopReason (responses)', () => {
  const responsesCheck = (result: Item[]) => noopReason(agentsSdkRun, result, counter, responsesAdapter);
  it('C7 A2: unchanged, empty and grown in the responses format', () => {
    expect(responsesCheck(structuredClone(agentsSdkRun))).toBe('unchanged');
    expect(responsesCheck([])).toBe('empty_result');
    expect(responsesCheck([...agentsSdkRun, { type: 'function_call', callId: 'x', name: 'f', arguments: '{"a":1}' }])).toBe('grown');
  });
  it('C7 A2: tool arguments count: a result that only moves text into a call argument is grown', () => {
    const result: Item[] = [agentsSdkRun[0]!, { type: 'function_call', callId: 'x', name: 'f', arguments: JSON.stringify(agentsSdkRun) }];
    expect(responsesCheck(result)).toBe('grown');
  });
  it('C7 A2: a real compaction of the SDK run is progress', () => {
    expect(
      responsesCheck([
        agentsSdkRun[0]!,
        agentsSdkRun[1]!,
        responsesAdapter.summaryItem(`${SUMMARY_PREFIX} booked`),
        ...agentsSdkRun.slice(-1),
      ]),
    ).toBeNull();
  });
});
