// The body checks of lib/api/json-body.ts after they became one linear pass (issue 22 finding 6):
// the exact-number scan's fast path, strings skipped whatever they hold, and the 400 still naming
// the field, also deep inside a large body. Their cost is measured in bench/ (json-body row), never here.
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../lib/api/errors.js';
import { MAX_JSON_DEPTH, parseJsonBody } from '../../../lib/api/json-body.js';

const parse = (text: string): unknown =>
  parseJsonBody({ body: Buffer.from(text), contentType: 'application/json', declaredLength: Buffer.byteLength(text) }, 8 << 20);

function refusal(text: string): { field?: unknown; message: string } {
  try {
    parse(text);
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    const e = err as HttpError;
    expect([e.status, e.code]).toEqual([400, 'invalid_request']);
    return { field: e.details['field'], message: e.message };
  }
  throw new Error(`accepted: ${text}`);
}

describe('F1: request body numbers and depth, checked in one pass', () => {
  it('F1: integers up to 15 characters pass the fast path; longer ones are checked exactly', () => {
    expect(parse('{"a":[123456789012345,-12345678901234,0,-0,9007199254740991,9007199254740992]}')).toEqual({
      a: [123456789012345, -12345678901234, 0, -0, 9007199254740991, 9007199254740992],
    });
    expect(refusal('{"a":[1,2,{"b":9007199254740993}]}').field).toBe('a[2].b');
    expect(refusal('{"n":12345678901234567890}').field).toBe('n');
  });

  it('F1: decimals and exponents are exact or refused, whatever their spelling', () => {
    expect(parse('{"x":[1.5,0.1,1e3,1E-7,2.50,-0.0]}')).toEqual({ x: [1.5, 0.1, 1000, 1e-7, 2.5, -0] });
    expect(refusal('{"x":[1,1e400]}').field).toBe('x[1]');
    expect(refusal('{"x":{"y":1e-400}}').field).toBe('x.y');
    expect(refusal('{"x":0.1000000000000000055511151231257827}').field).toBe('x');
  });

  it('F1: digits inside strings (escaped quotes and backslashes included) are never taken for numbers', () => {
    const text = String.raw`{"s":"\"12345678901234567890\\","t":"a\\\"1e400","u":["1e400"]}`;
    expect(parse(text)).toEqual(JSON.parse(text));
  });

  it('F1: a refused number deep in a 330,000-number body is named by its index', () => {
    const nums = Array.from({ length: 330_000 }, (_, i) => i % 1000);
    const text = `{"messages":[${nums.join(',')},9007199254740993]}`;
    expect(refusal(text).field).toBe('messages[330000]');
  });

  it(`F1: nesting past ${MAX_JSON_DEPTH} levels is refused naming the deepest container's field`, () => {
    let deep: unknown = 1;
    for (let i = 0; i < MAX_JSON_DEPTH; i++) deep = i % 2 ? { k: deep } : [deep];
    const r = refusal(JSON.stringify({ ok: [1, 2], deep }));
    expect(r.message).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    expect(String(r.field)).toMatch(/^deep(\.k|\[0\])+$/);
    // One level less is fine.
    let ok: unknown = 1;
    for (let i = 0; i < MAX_JSON_DEPTH - 1; i++) ok = [ok];
    expect(parse(JSON.stringify({ ok }))).toEqual({ ok });
  });
});
