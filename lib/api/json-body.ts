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
  const ndjson = NDJSON.test(req.contentType ?? '');
  if (!ndjson) assertJsonUtf8(req.contentType);
  let text: string;
  try {
    text = STRICT_UTF8.decode(req.body);
  } catch {
    throw new HttpError(400, 'invalid_json', 'request body is not valid UTF-8');
  }
  // H5's import: JSON Lines, each line held to the same rules as a JSON body; the body is the lines' values.
  if (ndjson) return text.split('\n').flatMap((line, i) => (line.trim() ? [parseLine(line, i + 1)] : []));
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

const NDJSON = /^\s*application\/(x-)?ndjson\s*(;\s*charset\s*=\s*"?utf-?8"?\s*)?$/i;

function parseLine(line: string, n: number): unknown {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    throw new HttpError(400, 'invalid_json', `line ${n} of the body is not valid JSON: ${(err as Error).message}`);
  }
  assertDepth(value);
  assertExactNumbers(line, value);
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

// Validation work is linear in the body and small per value (issue 22: a 1 MB array of numbers
// took 1.5 s of CPU to refuse): only objects and arrays are visited, a field's path is spelled out
// only for the one value that fails, and numbers are checked by one scan of the text with a fast
// path for the literals a double always holds exactly.

/** A container met during a walk; its path is rebuilt from the parent links only when needed. */
interface Visit {
  value: object;
  depth: number;
  parent: Visit | undefined;
  key: string | number;
}

function pathOfVisit(v: Visit | undefined, leaf?: string | number): string {
  const keys: (string | number)[] = leaf === undefined ? [] : [leaf];
  for (let cur = v; cur?.parent; cur = cur.parent) keys.push(cur.key);
  let path = '';
  for (let i = keys.length - 1; i >= 0; i--) {
    const k = keys[i]!;
    path = typeof k === 'number' ? `${path}[${k}]` : childPath(path, k);
  }
  return path;
}

/** Calls `visit` on every object and array, root first; stops when it returns true. Iterative: no stack overflow. */
function walkContainers(value: unknown, visit: (v: Visit) => boolean | void): void {
  if (typeof value !== 'object' || value === null) return;
  const stack: Visit[] = [{ value, depth: 0, parent: undefined, key: '' }];
  while (stack.length > 0) {
    const cur = stack.pop()!;
    if (visit(cur)) return;
    const v = cur.value;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x: unknown = v[i];
        if (typeof x === 'object' && x !== null) stack.push({ value: x, depth: cur.depth + 1, parent: cur, key: i });
      }
    } else {
      for (const k of Object.keys(v)) {
        const x: unknown = (v as Record<string, unknown>)[k];
        if (typeof x === 'object' && x !== null) stack.push({ value: x, depth: cur.depth + 1, parent: cur, key: k });
      }
    }
  }
}

function assertDepth(value: unknown): void {
  walkContainers(value, (v) => {
    if (v.depth < MAX_JSON_DEPTH) return false;
    const field = pathOfVisit(v) || 'body';
    throw new HttpError(400, 'invalid_request', `${field}: nested deeper than ${MAX_JSON_DEPTH} levels`, { field });
  });
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/**
 * A literal of at most this many digits and no exponent always survives a round trip through a
 * double (DBL_DIG = 15: every decimal of 15 significant digits does, and without an exponent its
 * magnitude is far from the subnormal and overflow ranges).
 */
const ALWAYS_EXACT_DIGITS = 15;

/** Index of the quote closing the JSON string that opens at `start`. */
function endOfString(text: string, start: number): number {
  let q = text.indexOf('"', start + 1);
  for (;;) {
    let backslashes = 0;
    while (text.charCodeAt(q - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return q;
    q = text.indexOf('"', q + 1);
  }
}

/** One pass over text JSON.parse accepted: outside strings, a number starts with "-" or a digit. */
function assertExactNumbers(text: string, value: unknown): void {
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = endOfString(text, i);
      continue;
    }
    if (c !== MINUS && (c < DIGIT_0 || c > DIGIT_9)) continue;
    let j = i;
    let digits = 0;
    let exponent = false;
    for (; j < n; j++) {
      const d = text.charCodeAt(j);
      if (d >= DIGIT_0 && d <= DIGIT_9) digits++;
      else if (d === 0x65 || d === 0x45)
        exponent = true; // "e", "E"
      else if (d !== 0x2e && d !== 0x2b && d !== MINUS) break; // ".", "+", "-" inside a number literal
    }
    if (exponent || digits > ALWAYS_EXACT_DIGITS) {
      const literal = text.slice(i, j);
      if (!isExact(literal)) inexact(literal, value);
    }
    i = j - 1;
  }
}

function inexact(literal: string, value: unknown): never {
  const path = pathOf(value, Number(literal)) ?? 'body';
  throw new HttpError(
    400,
    'invalid_request',
    `${path}: the number ${literal.length > 40 ? `${literal.slice(0, 40)}…` : literal} cannot be stored exactly (JSON numbers are IEEE-754 doubles); send it as a string`,
    { field: path },
  );
}

/** The literal's decimal value survives a round trip through a double. */
export function isExact(literal: string): boolean {
  const n = Number(literal);
  if (!Number.isFinite(n)) return false;
  if (String(n) === literal) return true; // the literal is the double's own shortest spelling
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

/** Where in the parsed body a number is (the first found), for a 400 that names the field. */
function pathOf(value: unknown, n: number): string | undefined {
  let found: string | undefined;
  walkContainers(value, (v) => {
    const entries: [string | number, unknown][] = Array.isArray(v.value) ? v.value.map((x: unknown, i) => [i, x]) : Object.entries(v.value);
    for (const [k, x] of entries) {
      if (typeof x === 'number' && Object.is(x, n)) {
        found = pathOfVisit(v, k);
        return true;
      }
    }
    return false;
  });
  return found;
}
