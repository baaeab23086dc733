// The request body as the API accepts it: at most MAX_BODY_BYTES, `application/json` in UTF-8
// (any other charset is 415, bytes that are not UTF-8 are 400), nested at most MAX_JSON_DEPTH
// deep, and every number exactly what the client wrote. A number JSON cannot carry exactly
// (1e400, 12345678901234567890, 1e-400) is refused rather than silently changed (issue 11).
import { HttpError } from './errors.js';

export const MAX_JSON_DEPTH = 64;

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

export interface RawRequest {
  body: Buffer;
  contentType: string | undefined;
  declaredLength: number;
}

/** Parses the body; an empty one is `undefined`. */
export function parseJsonBody(req: RawRequest, maxBytes: number): unknown {
  if (Number.isFinite(req.declaredLength) && req.declaredLength > maxBytes) {
    throw new HttpError(413, 'payload_too_large', `request body is ${req.declaredLength} bytes; the limit is ${maxBytes}`);
  }
  if (req.body.length > maxBytes)
    throw new HttpError(413, 'payload_too_large', `request body is ${req.body.length} bytes; the limit is ${maxBytes}`);
  if (req.body.length === 0) {
    // A declared body that did not arrive as text is not an absent body: serverless-offline hands
    // falsy JSON literals (`null`, `false`, `0`) over pre-parsed, losing the text API Gateway would send.
    if (req.declaredLength > 0) throw new HttpError(400, 'invalid_request', 'request body must be a JSON object');
    return undefined;
  }
  assertJsonUtf8(req.contentType);
  let text: string;
  try {
    text = STRICT_UTF8.decode(req.body);
  } catch {
    throw new HttpError(400, 'invalid_json', 'request body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, 'invalid_json', `request body is not valid JSON: ${(err as Error).message}`);
  }
  assertDepth(value);
  assertExactNumbers(text, value);
  return value;
}

function assertJsonUtf8(type: string | undefined): void {
  const m = type ? /^\s*application\/json\s*(;.*)?$/i.exec(type) : null;
  if (!m) throw new HttpError(415, 'unsupported_media_type', `content-type must be application/json (got ${type ? `"${type}"` : 'none'})`);
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(m[1] ?? '')?.[1];
  if (charset && !/^utf-?8$/i.test(charset)) {
    throw new HttpError(415, 'unsupported_media_type', `charset must be utf-8 (got "${charset}")`);
  }
}

/** Where a value sits: its parent's place and its key (the path is spelled out only for an error). */
interface Place {
  parent: Place | undefined;
  key: string | number;
}

function pathOfPlace(place: Place | undefined): string {
  const keys: (string | number)[] = [];
  for (let p = place; p; p = p.parent) keys.push(p.key);
  let path = '';
  for (const k of keys.reverse()) path = typeof k === 'number' ? `${path}[${k}]` : childPath(path, k);
  return path;
}

/**
 * Iterative, so a hostile body cannot overflow the stack while we look; linear in the body
 * (A7: a 5 MB body of small values is checked without building a path per value).
 */
function assertDepth(value: unknown): void {
  const stack: [unknown, number, Place | undefined][] = [[value, 0, undefined]];
  while (stack.length > 0) {
    const [v, depth, place] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= MAX_JSON_DEPTH) {
      const field = pathOfPlace(place) || 'body';
      throw new HttpError(400, 'invalid_request', `${field}: nested deeper than ${MAX_JSON_DEPTH} levels`, { field });
    }
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x: unknown = v[i];
        if (typeof x === 'object' && x !== null) stack.push([x, depth + 1, { parent: place, key: i }]);
      }
    } else {
      for (const k in v) {
        if (!Object.hasOwn(v, k)) continue;
        const x = (v as Record<string, unknown>)[k];
        if (typeof x === 'object' && x !== null) stack.push([x, depth + 1, { parent: place, key: k }]);
      }
    }
  }
}

// A JSON string (skipped) or a JSON number literal.
const TOKENS = /"(?:[^"\\]|\\.)*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

function assertExactNumbers(text: string, value: unknown): void {
  for (const m of text.matchAll(TOKENS)) {
    const literal = m[0];
    if (literal.startsWith('"') || isExact(literal)) continue;
    const parsed = Number(literal);
    const path = pathOf(value, parsed) ?? 'body';
    throw new HttpError(
      400,
      'invalid_request',
      `${path}: the number ${literal.length > 40 ? `${literal.slice(0, 40)}…` : literal} cannot be stored exactly (JSON numbers are IEEE-754 doubles); send it as a string`,
      { field: path },
    );
  }
}

/** Integers of up to 15 digits are always exact (a double carries 15-17). */
const SHORT_INTEGER = /^-?\d{1,15}$/;

/** The literal's decimal value survives a round trip through a double. */
export function isExact(literal: string): boolean {
  if (SHORT_INTEGER.test(literal)) return true;
  const n = Number(literal);
  // The common case, decided without decimal arithmetic: the shortest spelling of the double is the literal.
  if (String(n) === literal) return true;
  if (!Number.isFinite(n)) return false;
  return sameDecimal(decimal(literal), decimal(String(n)));
}

/** Sign, significant digits and exponent of a decimal literal (value = 0.digits × 10^exp). */
function decimal(literal: string): { neg: boolean; digits: string; exp: number } {
  const m = /^(-?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(literal)!;
  const int = m[2] ?? '';
  const frac = m[3] ?? '';
  let digits = int + frac;
  let exp = int.length + Number(m[4] ?? 0);
  const lead = /^0*/.exec(digits)![0].length;
  digits = digits.slice(lead);
  exp -= lead;
  digits = digits.replace(/0+$/, '');
  return { neg: m[1] === '-', digits, exp };
}

function sameDecimal(a: ReturnType<typeof decimal>, b: ReturnType<typeof decimal>): boolean {
  if (a.digits === '' && b.digits === '') return true; // 0 and -0
  return a.neg === b.neg && a.digits === b.digits && a.exp === b.exp;
}

export function childPath(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** Where in the parsed body a number is (first match, breadth first), for a 400 that names the field. */
function pathOf(value: unknown, n: number): string | undefined {
  const queue: [unknown, string][] = [[value, '']];
  for (let i = 0; i < queue.length; i++) {
    const [v, path] = queue[i]!;
    if (typeof v === 'number' && Object.is(v, n)) return path || undefined;
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) v.forEach((x, j) => queue.push([x, `${path}[${j}]`]));
    else for (const [k, x] of Object.entries(v)) queue.push([x, childPath(path, k)]);
  }
  return undefined;
}
