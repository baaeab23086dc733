import { describe, expect, it } from 'vitest';
import { optionsFor } from '../../../lib/compaction/engine-options.js';
import type { CompressionEngine } from '../../../lib/compressors/types.js';

const engine = (accepted: CompressionEngine['acceptedOptions']): CompressionEngine => ({
  name: 'e',
  acceptedOptions: accepted,
  compress: async (t) => ({ items: [...t.items] }),
});

describe('optionsFor', () => {
  const signal = new AbortController().signal;
  const all = { keepLast: 4, targetTokens: 1000, signal, deadline: 123, focus: 'x' };

  it('C6: passes only the options the engine declares', () => {
    expect(optionsFor(engine(['keepLast']), all)).toEqual({ keepLast: 4 });
    expect(optionsFor(engine([]), all)).toEqual({});
    expect(optionsFor(engine(['signal', 'deadline']), all)).toEqual({ signal, deadline: 123 });
  });

  it('C6: an option the attempt has no value for is not passed at all', () => {
    const o = optionsFor(engine(['keepLast', 'targetTokens']), { keepLast: undefined, targetTokens: 5 });
    expect(o).toEqual({ targetTokens: 5 });
    expect('keepLast' in o).toBe(false);
  });

  it('C6: a throwing acceptedOptions getter propagates', () => {
    const bomb = {
      name: 'bomb',
      get acceptedOptions(): never {
        throw new Error('options boom');
      },
      compress: async () => ({ items: [] }),
    } satisfies CompressionEngine;
    expect(() => optionsFor(bomb, all)).toThrow('options boom');
  });
});
