import { describe, expect, it } from 'vitest';
import { noopReason } from '../../../lib/compaction/result-check.js';
import { SUMMARY_PREFIX, type Message } from '../../../lib/messages.js';

const input: Message[] = Array.from({ length: 20 }, (_, i) => ({ role: 'user', content: `message number ${i}` }));

describe('noopReason', () => {
  it('C7: empty result', () => expect(noopReason(input, [])).toBe('empty_result'));
  it('C7: an equal copy is unchanged', () => expect(noopReason(input, structuredClone(input))).toBe('unchanged'));
  it('C7: a result with more tokens than the input is grown', () => {
    expect(noopReason(input, [...input, { role: 'assistant', content: 'more' }])).toBe('grown');
  });
  it('C7: fewer messages but more tokens is still grown', () => {
    expect(noopReason(input, [{ role: 'user', content: 'word '.repeat(500) }])).toBe('grown');
  });
  it('C7: a smaller result is progress', () => {
    expect(noopReason(input, [{ role: 'user', content: `${SUMMARY_PREFIX} summary` }, { role: 'user', content: 'tail' }])).toBeNull();
  });
  it('C7: same roles, different content is not unchanged', () => {
    const shorter = input.map((m) => ({ ...m, content: 'x' }));
    expect(noopReason(input, shorter)).toBeNull();
  });
});
