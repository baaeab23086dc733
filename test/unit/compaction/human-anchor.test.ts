import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { insertAnchor, isRealUserMessage, restoreHumanAnchor } from '../../../lib/compaction/human-anchor.js';
import { SUMMARY_PREFIX, type Message } from '../../../lib/messages.js';

const userPairs = (ms: readonly Message[]): number =>
  ms.slice(1).filter((m, i) => m.role === 'user' && ms[i]!.role === 'user').length;

describe('human anchor', () => {
  it('C8: a user-role summary and synthetic scaffolding are not real user messages', () => {
    expect(isRealUserMessage({ role: 'user', content: `${SUMMARY_PREFIX}\n## Historical Task Snapshot\nUser asked: x` })).toBe(false);
    expect(isRealUserMessage({ role: 'user', content: '[Your active task list was preserved]', synthetic: true })).toBe(false);
    expect(isRealUserMessage({ role: 'assistant', content: 'please continue' })).toBe(false);
    expect(isRealUserMessage({ role: 'user', content: 'please continue' })).toBe(true);
  });

  it('C8: compressor dropped every user turn: the last real user turn is restored, alone', () => {
    const input: Message[] = [
      { role: 'user', content: 'first request' },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: 'please continue from here' },
      { role: 'assistant', content: 'working' },
    ];
    const r = restoreHumanAnchor([{ role: 'assistant', content: `${SUMMARY_PREFIX} earlier work was summarized` }], input);
    expect(r.restored).toBe('inserted');
    expect(r.messages.filter((m) => m.role === 'user')).toEqual([{ role: 'user', content: 'please continue from here' }]);
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
    );
    expect(r.messages.some((m) => m.role === 'user' && m.content.startsWith('the actual human objective'))).toBe(true);
    expect(userPairs(r.messages)).toBe(0);
  });

  it('C8: a compacted list that already has a real user turn is returned as is (a copy)', () => {
    const compacted: Message[] = [{ role: 'assistant', content: 's' }, { role: 'user', content: 'still here' }];
    const r = restoreHumanAnchor(compacted, [{ role: 'user', content: 'older' }]);
    expect(r.restored).toBe('none');
    expect(r.messages).toEqual(compacted);
    expect(r.messages).not.toBe(compacted);
  });

  it('C8: no real user turn in the input either: nothing is invented', () => {
    const r = restoreHumanAnchor([{ role: 'assistant', content: 's' }], [{ role: 'user', content: 'x', synthetic: true }]);
    expect(r.restored).toBe('none');
    expect(r.messages).toEqual([{ role: 'assistant', content: 's' }]);
  });

  it('C8: restoring next to leading and trailing synthetic user turns never creates consecutive user roles', () => {
    const compacted: Message[] = [
      { role: 'user', content: '[System: Your previous response was truncated ...]', synthetic: true },
      { role: 'assistant', content: 'summary' },
      { role: 'user', content: '[Your active task list was preserved across context compression]', synthetic: true },
    ];
    const r = insertAnchor(compacted, { role: 'user', content: 'REAL HUMAN ASK' });
    expect(userPairs(r.messages)).toBe(0);
    expect(r.messages.some((m) => m.content.startsWith('REAL HUMAN ASK'))).toBe(true);
    expect(r.messages.filter(isRealUserMessage)).toHaveLength(1);
  });

  it('C8: scaffolding-only transcript: merged into one message that leads with the human text, synthetic flag dropped', () => {
    const compacted: Message[] = [
      { role: 'user', content: '[Your active task list was preserved across context compression]', synthetic: true, name: 'todo' },
    ];
    const r = insertAnchor(compacted, { role: 'user', content: 'REAL HUMAN ASK' });
    expect(r.restored).toBe('merged');
    expect(r.messages).toHaveLength(1);
    expect(r.messages[0]!.content.startsWith('REAL HUMAN ASK')).toBe(true);
    expect(r.messages[0]!.content).toContain('[Your active task list was preserved');
    expect(r.messages[0]!.synthetic).toBeUndefined();
    expect(r.messages[0]!.name).toBe('todo');
    expect(isRealUserMessage(r.messages[0]!)).toBe(true);
  });

  it('C8: the anchor is not placed between an assistant turn and its tool result', () => {
    const compacted: Message[] = [
      { role: 'assistant', content: `${SUMMARY_PREFIX} s` },
      { role: 'tool', content: 'result', tool_call_id: 'c1' },
      { role: 'assistant', content: 'done' },
    ];
    const r = insertAnchor(structuredClone(compacted), { role: 'user', content: 'ask' });
    const i = r.messages.findIndex((m) => m.content === 'ask');
    expect(r.messages[i + 1]?.role).not.toBe('tool');
  });

  it('C8 (property): restoring always yields a real user turn and never adds a user/user adjacency', () => {
    const msg = fc.oneof(
      fc.record({ role: fc.constantFrom('assistant' as const, 'tool' as const, 'system' as const), content: fc.string() }),
      fc.record({ role: fc.constant('user' as const), content: fc.string(), synthetic: fc.constant(true) }),
      fc.record({ role: fc.constant('user' as const), content: fc.string().map((s) => `${SUMMARY_PREFIX}${s}`) }),
    );
    fc.assert(
      fc.property(fc.array(msg, { maxLength: 8 }), (compacted) => {
        const input: Message[] = [{ role: 'user', content: 'HUMAN' }, { role: 'assistant', content: 'ok' }];
        const before = structuredClone(compacted);
        const r = restoreHumanAnchor(compacted, input);
        expect(compacted).toEqual(before); // never mutates its argument
        expect(r.messages.filter(isRealUserMessage).length).toBeGreaterThanOrEqual(1);
        expect(r.messages.some((m) => m.content.startsWith('HUMAN'))).toBe(true);
        expect(userPairs(r.messages)).toBeLessThanOrEqual(userPairs(compacted));
      }),
    );
  });
});
