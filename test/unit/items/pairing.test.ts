import { describe, expect, it } from 'vitest';
import { chatAdapter } from '../../../lib/items/chat.js';
import { pairCalls } from '../../../lib/items/pairing.js';
import { responsesAdapter } from '../../../lib/items/responses.js';
import type { Item } from '../../../lib/items/types.js';
import { agentsSdkPendingCall, agentsSdkRun, allFixtures, chatParallelTools, chatWeather } from '../../fixtures/transcripts/index.js';

const safeCuts = (items: Item[], adapter = chatAdapter): number[] => {
  const p = pairCalls(items, adapter);
  return Array.from({ length: items.length + 1 }, (_, i) => i).filter((i) => p.isSafeCut(i));
};

describe('A2: tool-call pairing decides where a transcript may be cut', () => {
  it('A2: chat: never between an assistant call and its tool message', () => {
    // 0 system, 1 user, 2 assistant(call), 3 tool, 4 assistant
    expect(safeCuts(chatWeather)).toEqual([0, 1, 2, 4, 5]);
  });

  it('A2: chat: parallel calls and their three results stay together', () => {
    // 0 developer, 1 user, 2 assistant(3 calls), 3-5 tool, 6 assistant
    expect(safeCuts(chatParallelTools)).toEqual([0, 1, 2, 6, 7]);
  });

  it('A2: responses: callId/call_id pairs, and a reasoning item stays with the call it produced', () => {
    // 0 system, 1 user, 2 reasoning, 3 fc, 4 result, 5 fc, 6 result, 7 msg, 8 user, 9 fc, 10 result, 11 hosted, 12 msg
    expect(safeCuts(agentsSdkRun, responsesAdapter)).toEqual([0, 1, 2, 5, 7, 8, 9, 11, 12, 13]);
  });

  it('A2: responses: results after several calls (fc1, fc2, out1, out2) keep the whole group together', () => {
    const items: Item[] = [
      { role: 'user', content: 'go' },
      { type: 'function_call', call_id: 'a', name: 'f', arguments: '{}' },
      { type: 'function_call', call_id: 'b', name: 'f', arguments: '{}' },
      { type: 'function_call_output', call_id: 'a', output: '1' },
      { type: 'function_call_output', call_id: 'b', output: '2' },
      { role: 'assistant', content: 'done' },
    ];
    expect(safeCuts(items, responsesAdapter)).toEqual([0, 1, 5, 6]);
    expect(pairCalls(items, responsesAdapter).safeCutAtOrBefore(4, 0)).toBe(1);
  });

  it('A2: an unanswered call forbids every cut after it: it is always kept with what follows', () => {
    const p = pairCalls(agentsSdkPendingCall, responsesAdapter);
    expect(p.unansweredCallIds).toEqual(['call_refund']);
    expect(p.isSafeCut(agentsSdkPendingCall.length)).toBe(false);
    expect(p.safeCutAtOrBefore(agentsSdkPendingCall.length, 0)).toBe(4);
  });

  it('A2: ids reused across turns pair in order; an orphan result is reported and never starts a part', () => {
    const call = (id: string): Item => ({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'f', arguments: '' } }],
    });
    const result = (id: string): Item => ({ role: 'tool', tool_call_id: id, content: 'ok' });
    const items = [call('call_0'), result('call_0'), call('call_0'), result('call_0'), result('ghost')];
    const p = pairCalls(items, chatAdapter);
    expect(p.unansweredCallIds).toEqual([]);
    expect(p.orphanResultIds).toEqual(['ghost']);
    expect(safeCuts(items)).toEqual([0, 2, 5]);
  });

  it('A2: every fixture is fully paired (except the pending call)', () => {
    for (const f of allFixtures) {
      const p = pairCalls(f.items, f.format === 'chat' ? chatAdapter : responsesAdapter);
      expect(p.orphanResultIds, f.name).toEqual([]);
      expect(p.unansweredCallIds, f.name).toEqual(f.items === agentsSdkPendingCall ? ['call_refund'] : []);
    }
  });
});
