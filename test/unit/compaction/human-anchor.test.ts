import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasRealUserMessage, insertAnchor, isRealUserMessage, restoreHumanAnchor } from '../../../lib/compaction/human-anchor.js';
import { chatAdapter as chat } from '../../../lib/items/chat.js';
import { pairCalls } from '../../../lib/items/pairing.js';
import { responsesAdapter as responses } from '../../../lib/items/responses.js';
import { SUMMARY_PREFIX, type FormatAdapter, type Item } from '../../../lib/items/types.js';
import { agentsSdkRun } from '../../fixtures/transcripts/index.js';

const userPairs = (items: readonly Item[], adapter: FormatAdapter): number =>
  items.slice(1).filter((m, i) => adapter.roleOf(m) === 'user' && adapter.roleOf(items[i]!) === 'user').length;
const texts = (items: readonly Item[], adapter: FormatAdapter): string[] => items.map((i) => adapter.messageTextOf(i));

describe('C8: human anchor (chat)', () => {
  it('C8: a user-role summary and synthetic scaffolding are not real user messages', () => {
    expect(chat.isHumanTurn({ role: 'user', content: `${SUMMARY_PREFIX}\n## Historical Task Snapshot\nUser asked: x` })).toBe(false);
    expect(chat.isHumanTurn({ role: 'user', content: '[Your active task list was preserved]', synthetic: true })).toBe(false);
    expect(chat.isHumanTurn({ role: 'assistant', content: 'please continue' })).toBe(false);
    expect(chat.isHumanTurn({ role: 'user', content: 'please continue' })).toBe(true);
    expect(isRealUserMessage({ role: 'user', content: 'please continue' }, chat)).toBe(true);
    expect(
      hasRealUserMessage(
        [
          { role: 'user', content: 'x', synthetic: true },
          { role: 'assistant', content: 'y' },
        ],
        chat,
      ),
    ).toBe(false);
  });

  it('C8: compressor dropped every user turn: the last real user turn is restored, alone', () => {
    const input: Item[] = [
      { role: 'user', content: 'first request' },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: 'please continue from here' },
      { role: 'assistant', content: 'working' },
    ];
    const r = restoreHumanAnchor([{ role: 'assistant', content: `${SUMMARY_PREFIX} earlier work was summarized` }], input, chat);
    expect(r.restored).toBe('inserted');
    expect(r.items.filter((m) => m.role === 'user')).toEqual([{ role: 'user', content: 'please continue from here' }]);
  });

  it('C8: synthetic scaffolding does not replace the human anchor', () => {
    const r = restoreHumanAnchor(
      [
        { role: 'assistant', content: `${SUMMARY_PREFIX} summary` },
        { role: 'user', content: '[Your active task list was preserved across context compression]', synthetic: true },
      ],
      [
        { role: 'user', content: 'the actual human objective' },
        { role: 'assistant', content: 'working' },
      ],
      chat,
    );
    expect(texts(r.items, chat).some((t) => t.startsWith('the actual human objective'))).toBe(true);
    expect(userPairs(r.items, chat)).toBe(0);
  });

  it('C8: a compacted list that already has a real user turn is returned as is (a copy)', () => {
    const compacted: Item[] = [
      { role: 'assistant', content: 's' },
      { role: 'user', content: 'still here' },
    ];
    const r = restoreHumanAnchor(compacted, [{ role: 'user', content: 'older' }], chat);
    expect(r.restored).toBe('none');
    expect(r.items).toEqual(compacted);
    expect(r.items).not.toBe(compacted);
  });

  it('C8: no real user turn in the input either: nothing is invented', () => {
    const r = restoreHumanAnchor([{ role: 'assistant', content: 's' }], [{ role: 'user', content: 'x', synthetic: true }], chat);
    expect(r.restored).toBe('none');
    expect(r.items).toEqual([{ role: 'assistant', content: 's' }]);
  });

  it('C8: restoring next to leading and trailing synthetic user turns never creates consecutive user roles', () => {
    const compacted: Item[] = [
      { role: 'user', content: '[System: Your previous response was truncated ...]', synthetic: true },
      { role: 'assistant', content: 'summary' },
      { role: 'user', content: '[Your active task list was preserved across context compression]', synthetic: true },
    ];
    const r = insertAnchor(compacted, { role: 'user', content: 'REAL HUMAN ASK' }, chat);
    expect(userPairs(r.items, chat)).toBe(0);
    expect(texts(r.items, chat).some((t) => t.startsWith('REAL HUMAN ASK'))).toBe(true);
    expect(r.items.filter((m) => chat.isHumanTurn(m))).toHaveLength(1);
  });

  it('C8: scaffolding-only transcript: merged into one message that leads with the human text, synthetic flag dropped', () => {
    const compacted: Item[] = [
      { role: 'user', content: '[Your active task list was preserved across context compression]', synthetic: true, name: 'todo' },
    ];
    const r = insertAnchor(compacted, { role: 'user', content: 'REAL HUMAN ASK' }, chat);
    expect(r.restored).toBe('merged');
    expect(r.items).toHaveLength(1);
    expect(r.items[0]).toEqual({
      role: 'user',
      name: 'todo',
      content: 'REAL HUMAN ASK\n\n[Your active task list was preserved across context compression]',
    });
    expect(chat.isHumanTurn(r.items[0]!)).toBe(true);
  });

  it('C8 A2: the anchor is not placed between an assistant call and its tool result', () => {
    const compacted: Item[] = [
      { role: 'assistant', content: `${SUMMARY_PREFIX} s` },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', content: 'result', tool_call_id: 'c1' },
      { role: 'assistant', content: 'done' },
    ];
    const r = insertAnchor(structuredClone(compacted), { role: 'user', content: 'ask' }, chat);
    expect(r.items.findIndex((m) => m.content === 'ask')).not.toBe(2);
    expect(pairCalls(r.items, chat).orphanResultIds).toEqual([]);
  });
});

describe('C8 A2: human anchor (responses)', () => {
  const summary = responses.summaryItem(`${SUMMARY_PREFIX} earlier work`);
  const call: Item = { type: 'function_call', callId: 'c9', name: 'f', arguments: '{}' };
  const result: Item = { type: 'function_call_result', callId: 'c9', name: 'f', status: 'completed', output: 'r' };

  it('C8: an Agents SDK transcript whose user turns were all dropped gets its last real user item back, verbatim', () => {
    const compacted = [summary, ...agentsSdkRun.slice(-4)];
    const r = restoreHumanAnchor(compacted, agentsSdkRun, responses);
    expect(r.restored).toBe('inserted');
    expect(r.items[1]).toEqual(agentsSdkRun[8]); // the last real user turn (with its image part), right after the summary
    expect(r.items.filter((i) => responses.isHumanTurn(i))).toHaveLength(1);
  });

  it('C8: a user-role summary in responses format is not a human turn', () => {
    const userSummary: Item = { type: 'message', role: 'user', content: [{ type: 'input_text', text: `${SUMMARY_PREFIX} recap` }] };
    const r = restoreHumanAnchor([userSummary, call, result], [{ role: 'user', content: 'REAL' }, userSummary], responses);
    expect(r.restored).toBe('inserted');
    expect(r.items.filter((i) => responses.isHumanTurn(i))).toEqual([{ role: 'user', content: 'REAL' }]);
    expect(userPairs(r.items, responses)).toBe(0);
  });

  it('C8 A2: a slot never sits between a function_call and its result, nor after a reasoning item', () => {
    const reasoning: Item = { type: 'reasoning', id: 'rs', summary: [] };
    // The preferred slot (right after the summary) is inside the c9 pair; the next one is after its result.
    const compacted = [call, summary, result, reasoning, { ...call, callId: 'c10' }, { ...result, callId: 'c10' }];
    const r = insertAnchor(structuredClone(compacted), { role: 'user', content: 'ask' }, responses);
    const at = r.items.findIndex((i) => i.content === 'ask');
    expect(at).toBe(3);
    expect(pairCalls(compacted, responses).isSafeCut(at)).toBe(true);
    expect([2, 4, 5].map((i) => pairCalls(compacted, responses).isSafeCut(i))).toEqual([false, false, false]); // in a pair, after reasoning, in a pair
  });

  it('C8: scaffolding-only responses transcript: merged as input_text parts leading with the human text', () => {
    const scaffold: Item = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'task list' }], synthetic: true };
    const r = insertAnchor(
      [scaffold],
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'HUMAN' },
          { type: 'input_image', image_url: 'https://x/y.png' },
        ],
      },
      responses,
    );
    expect(r.restored).toBe('merged');
    expect(r.items).toEqual([
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'HUMAN' },
          { type: 'input_image', image_url: 'https://x/y.png' },
          { type: 'input_text', text: 'task list' },
        ],
      },
    ]);
  });
});

describe('C8 (property, both formats): restoring always yields a real user turn, at a safe slot, never adding user/user adjacency', () => {
  const cases: [string, FormatAdapter, fc.Arbitrary<Item[]>][] = [
    [
      'chat',
      chat,
      fc
        .array(
          fc.oneof(
            fc.record({ role: fc.constantFrom('assistant', 'system'), content: fc.string() }),
            fc.record({ role: fc.constant('user'), content: fc.string(), synthetic: fc.constant(true) }),
            fc.record({ role: fc.constant('user'), content: fc.string().map((s) => `${SUMMARY_PREFIX}${s}`) }),
            fc.nat(3).map((n): Item[] => [
              { role: 'assistant', content: null, tool_calls: [{ id: `c${n}`, type: 'function', function: { name: 'f', arguments: '' } }] },
              { role: 'tool', tool_call_id: `c${n}`, content: 'r' },
            ]),
          ),
          { maxLength: 8 },
        )
        .map((xs) => xs.flat()),
    ],
    [
      'responses',
      responses,
      fc
        .array(
          fc.oneof(
            fc
              .string()
              .map((s): Item => ({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: s }] })),
            fc.string().map((s): Item => ({ role: 'user', content: s, synthetic: true })),
            fc.string().map((s): Item => ({ role: 'user', content: `${SUMMARY_PREFIX}${s}` })),
            fc
              .record({ n: fc.nat(3), gap: fc.boolean(), think: fc.boolean() })
              .map(({ n, gap, think }): Item[] => [
                ...(think ? [{ type: 'reasoning', id: `rs${n}`, summary: [] }] : []),
                { type: 'function_call', call_id: `c${n}`, name: 'f', arguments: '{}' },
                ...(gap ? [{ type: 'web_search_call', id: `ws${n}`, status: 'completed' }] : []),
                { type: 'function_call_output', call_id: `c${n}`, output: 'r' },
              ]),
          ),
          { maxLength: 8 },
        )
        .map((xs) => xs.flat()),
    ],
  ];
  it.each(cases)('C8: %s', (_name, adapter, compactedArb) => {
    fc.assert(
      fc.property(compactedArb, (compacted) => {
        const input: Item[] = [
          { role: 'user', content: 'HUMAN' },
          { role: 'assistant', content: 'ok' },
        ];
        const before = structuredClone(compacted);
        const r = restoreHumanAnchor(compacted, input, adapter);
        expect(compacted).toEqual(before); // never mutates its argument
        expect(r.items.filter((i) => adapter.isHumanTurn(i)).length).toBeGreaterThanOrEqual(1);
        expect(texts(r.items, adapter).some((t) => t.startsWith('HUMAN'))).toBe(true);
        expect(userPairs(r.items, adapter)).toBeLessThanOrEqual(userPairs(compacted, adapter));
        if (r.restored === 'inserted') {
          const at = r.items.findIndex((i) => i.content === 'HUMAN');
          expect(pairCalls(compacted, adapter).isSafeCut(at)).toBe(true);
        }
      }),
      { numRuns: 300, seed: 808 },
    );
  });
});
