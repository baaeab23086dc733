import { assistant, protocol } from '@openai/agents-core';
import { describe, expect, it } from 'vitest';
import { responsesAdapter as responses } from '../../../lib/items/responses.js';
import { SUMMARY_PREFIX, type Item } from '../../../lib/items/types.js';
import {
  agentsSdkPendingCall,
  agentsSdkRun,
  responsesApiFunctionCalling,
  responsesFixtures,
  responsesHostedTools,
  responsesMixedParts,
  responsesShellAndPatch,
} from '../../fixtures/transcripts/index.js';

const byType = (items: readonly Item[], type: string): Item => items.find((i) => i.type === type)!;

describe('A2: the responses adapter reads Responses API and Agents SDK items', () => {
  it('A1: messages (typed or EasyInput) carry their role; calls are assistant, results tool, unknown types none', () => {
    expect(agentsSdkRun.slice(0, 5).map((i) => responses.roleOf(i))).toEqual(['system', 'user', 'assistant', 'assistant', 'tool']);
    expect(responses.roleOf(responsesApiFunctionCalling[0]!)).toBe('developer');
    expect(responses.roleOf(byType(responsesApiFunctionCalling, 'function_call_output'))).toBe('tool');
    expect(responses.roleOf(byType(responsesMixedParts, 'x_memory_snapshot'))).toBeUndefined();
    expect(responses.roleOf({ role: 'tool', content: 'x' })).toBeUndefined();
  });

  it('A2: calls pair by callId (SDK) and call_id (API), results answer them', () => {
    const fc = byType(agentsSdkRun, 'function_call');
    expect(responses.toolCallsOf(fc)).toEqual([{ id: 'call_W8wCqN', name: 'get_weather', arguments: '{"city":"Tokyo","when":"tonight"}' }]);
    expect(responses.toolResultIdOf(byType(agentsSdkRun, 'function_call_result'))).toBe('call_W8wCqN');
    expect(responses.toolCallsOf(byType(responsesApiFunctionCalling, 'function_call'))[0]?.id).toBe('call_Vx7pU3');
    expect(responses.toolResultIdOf(byType(responsesApiFunctionCalling, 'function_call_output'))).toBe('call_Vx7pU3');
  });

  it('A2: every paired call type in the fixtures is answered by its own result type', () => {
    const pairs = [
      ['computer_call', 'computer_call_output', responsesHostedTools],
      ['mcp_approval_request', 'mcp_approval_response', responsesHostedTools],
      ['shell_call', 'shell_call_output', responsesShellAndPatch],
      ['apply_patch_call', 'apply_patch_call_output', responsesShellAndPatch],
      ['local_shell_call', 'local_shell_call_output', responsesShellAndPatch],
      ['custom_tool_call', 'custom_tool_call_output', responsesShellAndPatch],
    ] as const;
    for (const [call, result, items] of pairs) {
      const id = responses.toolCallsOf(byType(items, call))[0]?.id;
      expect(id, call).toBeDefined();
      expect(responses.toolResultIdOf(byType(items, result)), result).toBe(id);
    }
  });

  it('A2: hosted tools carry their result inline: a call without an id, nothing to pair', () => {
    for (const type of ['web_search_call', 'file_search_call', 'code_interpreter_call', 'image_generation_call', 'mcp_call']) {
      const calls = responses.toolCallsOf(byType(responsesHostedTools, type));
      expect(calls, type).toHaveLength(1);
      expect(calls[0]!.id, type).toBeUndefined();
    }
    expect(responses.toolCallsOf(byType(agentsSdkRun, 'hosted_tool_call'))).toEqual([
      { name: 'web_search_call', arguments: '{"query":"鮨 さいとう dress code"}' },
    ]);
  });

  it('A2: textOf covers message parts, arguments, structured and string outputs, reasoning, hosted results', () => {
    const results = agentsSdkRun.filter((i) => i.type === 'function_call_result').map((i) => responses.textOf(i));
    expect(results).toEqual([
      'Tokyo tonight: clear, 18°C, 0% rain.',
      '1. 鮨 さいとう — 20:00 free\n2. Izakaya Toriyoshi — 20:15 free',
      'confirmed: booking SA-2231',
    ]);
    expect(responses.textOf(byType(agentsSdkRun, 'reasoning'))).toBe('Check the weather first, then search restaurants.');
    expect(responses.textOf(byType(responsesApiFunctionCalling, 'reasoning'))).toContain('Identifying the landmark');
    expect(responses.textOf(responsesApiFunctionCalling[1]!)).toBe('Where was this photo taken, and what is the weather there right now?');
    expect(responses.textOf(byType(responsesHostedTools, 'file_search_call'))).toContain('Refunds within 30 days of delivery.');
    expect(responses.textOf(byType(responsesHostedTools, 'code_interpreter_call'))).toContain('print(2 + 2)\n4');
    expect(responses.textOf(byType(responsesShellAndPatch, 'shell_call_output'))).toContain('expected 4, got 5');
    expect(responses.textOf(responsesMixedParts[3]!)).toBe('I can’t share internal notes.\nContract: 12 months, 30-day notice.');
  });

  it('A2: images and screenshots are not text (a base64 payload would count as tens of thousands of tokens)', () => {
    expect(responses.textOf(byType(responsesHostedTools, 'image_generation_call'))).not.toContain('iVBOR');
    expect(responses.textOf(byType(responsesHostedTools, 'computer_call_output'))).toBe('');
  });

  it('A1: unknown item types are counted by their JSON, so nothing they say is free', () => {
    const text = responses.textOf(byType(responsesMixedParts, 'x_memory_snapshot'));
    expect(text).toContain('prefers bullet points');
    expect(text).not.toContain('x_memory_snapshot');
  });

  it('A2: reasoning binds to the item after it', () => {
    expect(responses.bindsToNext(byType(agentsSdkRun, 'reasoning'))).toBe(true);
    expect(agentsSdkRun.filter((i) => responses.bindsToNext(i))).toHaveLength(1);
  });

  it('C8: human turns are user messages that are neither synthetic nor summaries', () => {
    expect(responsesMixedParts.filter((i) => responses.isHumanTurn(i))).toEqual([responsesMixedParts[2]]);
    expect(responses.isHumanTurn({ role: 'user', content: [{ type: 'input_text', text: `${SUMMARY_PREFIX} s` }] })).toBe(false);
    expect(responses.isHumanTurn({ type: 'function_call_output', call_id: 'c', output: 'x', role: 'user' })).toBe(false);
  });

  it("A2: the summary is the Agents SDK's own assistant item, valid SDK input, and recognised as a summary", () => {
    const text = `${SUMMARY_PREFIX} recap`;
    const summary = responses.summaryItem(text);
    expect(summary).toEqual(assistant(text));
    expect(protocol.ModelItem.safeParse(summary).success).toBe(true);
    expect(responses.isSummary(summary)).toBe(true);
    expect(responses.isHumanTurn(summary)).toBe(false);
  });

  it('A1: the SDK fixtures are valid Agents SDK input (its own zod protocol)', () => {
    for (const item of [...agentsSdkRun, ...agentsSdkPendingCall]) {
      expect(protocol.ModelItem.safeParse(item).success, JSON.stringify(item)).toBe(true);
    }
  });

  it('C8: merging leads with the human content as input_text parts, drops the flag, keeps the item type', () => {
    const into = responsesMixedParts[1]!;
    const merged = responses.mergeHumanText(into, { role: 'user', content: 'HUMAN' });
    expect(merged).toEqual({
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: 'HUMAN' }, ...(into.content as object[])],
    });
    expect(responses.isHumanTurn(merged)).toBe(true);
  });

  it('A2: render names calls with arguments and ids, results with the call they answer', () => {
    expect(responses.render(byType(agentsSdkRun, 'function_call'))).toBe(
      '[assistant] calls get_weather({"city":"Tokyo","when":"tonight"}) [call_W8wCqN]',
    );
    expect(responses.render(byType(agentsSdkRun, 'function_call_result'))).toBe(
      '[tool result for call_W8wCqN (get_weather)]\nTokyo tonight: clear, 18°C, 0% rain.',
    );
    expect(responses.render(byType(responsesHostedTools, 'web_search_call'))).toMatch(
      /^\[assistant\] calls web_search\(\{"type":"search","query":"positive news story today"/,
    );
    expect(responses.render(agentsSdkRun[1]!)).toMatch(/^\[user\]\nWhat is the weather in Tokyo/);
    expect(responses.render(byType(responsesMixedParts, 'x_memory_snapshot'))).toMatch(/^\[x_memory_snapshot\] /);
  });

  it('never throws on any fixture item or on odd stored fields', () => {
    const odd: Item[] = [
      { type: 'function_call', callId: 3 },
      { type: 'reasoning', summary: 'x' },
      { type: 'shell_call_output', output: [null] },
      { role: 5 },
    ];
    for (const item of [...responsesFixtures.flatMap((f) => f.items), ...odd]) {
      expect(() => [responses.textOf(item), responses.render(item), responses.toolCallsOf(item), responses.roleOf(item)]).not.toThrow();
    }
  });
});
