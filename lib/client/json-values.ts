// Items are stored as JSON and returned exactly as appended (SPEC A1). A value JSON cannot carry
// would come back as something else: a Uint8Array as {"0":1,"1":2,...}, a Map as {}, a Date as a
// string, NaN as null. Such values are refused before anything is sent, naming where they are.
import { LineageError } from './errors.js';

/** An item holds a value JSON cannot round-trip (binary, Map/Set, Date, bigint, NaN/Infinity, a cycle). Nothing was sent. */
export class UnsupportedValueError extends LineageError {
  override name = 'UnsupportedValueError';
  /** Where the value is, e.g. `items[0].content[1].image`. */
  readonly path: string;
  constructor(path: string, what: string, hint: string) {
    super(`${path} is ${what}, which JSON cannot store as it is; nothing was sent. ${hint}`);
    this.path = path;
  }
}

/** A value that holds itself: neither JSON nor a copy would ever finish (one wording for every check). */
export const cycleError = (path: string) =>
  new UnsupportedValueError(path, 'a reference to one of its own ancestors (a cycle)', 'Items must be trees.');

const BINARY_HINT = 'Only Uint8Array is kept as binary: send other binary data as a string (an image as a base64 data: URL).';

/** Throws UnsupportedValueError for the first value of `value` that JSON.stringify would not return as it is. */
export function assertJsonValue(value: unknown, path: string): void {
  if (value === undefined) throw new UnsupportedValueError(path, 'missing (undefined)', 'JSON would store null there.');
  walk(value, path, new Set());
}

function walk(v: unknown, path: string, stack: Set<object>): void {
  switch (typeof v) {
    case 'string':
    case 'boolean':
    case 'undefined': // dropped from objects, as JSON does; the SDK leaves optional fields undefined
    case 'function': // dropped too: code, not data, and no SDK item carries any
    case 'symbol':
      return;
    case 'number':
      if (!Number.isFinite(v)) throw new UnsupportedValueError(path, String(v), 'Store a finite number, or null.');
      return;
    case 'bigint':
      throw new UnsupportedValueError(path, 'a bigint', 'Store it as a string.');
  }
  if (v === null) return;
  const o = v as object;
  if (o instanceof ArrayBuffer || ArrayBuffer.isView(o) || isShared(o) || isBlob(o))
    throw new UnsupportedValueError(path, `binary (${o.constructor.name})`, BINARY_HINT);
  if (o instanceof Map || o instanceof Set)
    throw new UnsupportedValueError(path, `a ${o.constructor.name}`, 'Store an array or a plain object.');
  if (o instanceof Date) throw new UnsupportedValueError(path, 'a Date', 'Store date.toISOString().');
  if (stack.has(o)) throw cycleError(path);
  stack.add(o);
  if (Array.isArray(o)) {
    // Not forEach: it skips holes, and JSON turns a hole (or undefined) in an array into null.
    for (let i = 0; i < o.length; i++) {
      const x: unknown = o[i];
      if (x === undefined || typeof x === 'function' || typeof x === 'symbol')
        throw new UnsupportedValueError(
          `${path}[${i}]`,
          x === undefined ? 'missing (undefined)' : `a ${typeof x}`,
          'JSON would store null there.',
        );
      walk(x, `${path}[${i}]`, stack);
    }
  } else
    for (const [k, x] of Object.entries(o)) walk(x, /^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`, stack);
  stack.delete(o);
}

function isShared(o: object): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && o instanceof SharedArrayBuffer;
}

function isBlob(o: object): boolean {
  return typeof Blob !== 'undefined' && o instanceof Blob;
}
