// Binary values in items (issue 30): the Agents SDK keeps Uint8Array values in items (MemorySession
// clones them), and JSON cannot. LineageSession stores each one as `{"$bytes": "<base64>"}` and
// turns that back into a Uint8Array when it reads, so what the agent wrote is what it reads. The
// shape is reserved: an item that already holds an object of exactly that shape is refused (it
// would read back as bytes). Readers of the HTTP API see the stored form (docs/history-transactions.md).
import { cycleError, UnsupportedValueError } from './json-values.js';

export const BYTES_KEY = '$bytes';

/** A deep copy of `value` with every Uint8Array as `{"$bytes": base64}`; other values as they are. */
export function encodeBinary(value: unknown, path: string, ancestors = new Set<object>()): unknown {
  if (value instanceof Uint8Array) return { [BYTES_KEY]: toBase64(value) };
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return value;
  // The same words as assertJsonValue's: a cycle would never finish this copy.
  if (ancestors.has(value)) throw cycleError(path);
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const out: unknown[] = new Array<unknown>(value.length);
      for (let i = 0; i < value.length; i++) if (i in value) out[i] = encodeBinary(value[i], `${path}[${i}]`, ancestors);
      return out;
    }
    if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return value;
    if (isBytesShape(value))
      throw new UnsupportedValueError(
        path,
        `an object of the reserved shape {"${BYTES_KEY}": string}`,
        'It would read back as a Uint8Array.',
      );
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(value)) out[k] = encodeBinary(x, `${path}.${k}`, ancestors);
    return out;
  } finally {
    ancestors.delete(value);
  }
}

/** The inverse of encodeBinary on what the service returns (plain JSON). */
export function decodeBinary<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((x: unknown) => decodeBinary(x)) as T;
  if (isBytesShape(value)) return fromBase64((value as Record<string, string>)[BYTES_KEY]!) as T;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(value)) out[k] = decodeBinary(x);
  return out as T;
}

function isBytesShape(o: object): boolean {
  const keys = Object.keys(o);
  return keys.length === 1 && keys[0] === BYTES_KEY && typeof (o as Record<string, unknown>)[BYTES_KEY] === 'string';
}

// btoa/atob: in Node 16+ and every browser, so the package needs no Buffer.
function toBase64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function fromBase64(text: string): Uint8Array {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
