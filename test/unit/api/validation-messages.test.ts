// Issue 25: English validation messages are passed per parse (lib/validation.ts), so importing the
// API's schemas changes nothing in zod globally (a bundler told lib/ has no side effects could drop
// a global z.config() and leave every 400 saying "Invalid input").
import * as z from 'zod/mini';
import { describe, expect, it } from 'vitest';
import { parseWith } from '../../../lib/api/schemas.js';
import { safeParse } from '../../../lib/validation.js';

describe('validation messages', () => {
  it('F1: a 400 names what was expected, in English, through the per-parse locale', () => {
    const schema = z.object({ n: z.number() });
    expect(() => parseWith(schema, { n: 'x' }, 'body')).toThrow(/expected number, received string/);
    const r = safeParse(z.array(z.string()).check(z.maxLength(2)), ['a', 'b', 'c']);
    expect(r.success ? '' : r.error.issues[0]!.message).toMatch(/Too big: expected array to have <=2 items/);
  });

  it('importing the schemas configures nothing globally (no import side effect)', () => {
    const bare = z.number().safeParse('x');
    expect(bare.success ? '' : bare.error.issues[0]!.message).not.toMatch(/expected number/);
  });
});
