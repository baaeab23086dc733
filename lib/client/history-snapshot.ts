// The Agents SDK's rules for a history transaction's arguments (issue 30; @openai/agents-core 0.20
// MemorySession.applyHistoryTransaction is the reference): the envelope is read once, and items
// whose values cannot be snapshotted and compared deterministically (Dates, bigints, cycles,
// symbols, sparse or proxied arrays, non-enumerable or accessor fields, typed arrays other than
// Uint8Array, class instances) are refused before anything is sent, with the SDK's own messages,
// which never hold item content. Written here, not imported: the client bundles no SDK code.
import { LineageError } from './errors.js';

export type HistoryTransaction =
  { type: 'append_items'; items: unknown[] } | { type: 'replace_suffix'; expectedSuffix: unknown[]; replacement: unknown[] };

/** What the SDK throws as a UserError: a history transaction it refuses, or one that failed. */
export class HistoryTransactionError extends LineageError {
  override name = 'HistoryTransactionError';
}

export const INVALID_ITEMS = 'Session history transaction items contain invalid or unsupported data.';
const NOT_AN_OBJECT = 'Session history transaction must be an object.';

/** Reads `args` once and returns a detached snapshot of the operation id and transaction, or throws the SDK's message. */
export function snapshotTransactionArgs(args: unknown): { operationId: string; transaction: HistoryTransaction } {
  let operationId: unknown;
  let transaction: unknown;
  try {
    if (!args || typeof args !== 'object') throw new Error('missing');
    operationId = Reflect.get(args, 'operationId');
    transaction = Reflect.get(args, 'transaction');
  } catch {
    throw new HistoryTransactionError('Session history transaction arguments are invalid.');
  }
  if (typeof operationId !== 'string' || !operationId.trim())
    throw new HistoryTransactionError('Session history transaction operationId must be a non-empty string.');
  if (!transaction || typeof transaction !== 'object') throw new HistoryTransactionError(NOT_AN_OBJECT);
  return { operationId, transaction: snapshotTransaction(transaction) };
}

function snapshotTransaction(transaction: object): HistoryTransaction {
  let snap: unknown;
  try {
    snap = snapshotValue(transaction, new WeakSet());
    structuredClone(transaction);
  } catch {
    throw new HistoryTransactionError(INVALID_ITEMS);
  }
  if (!snap || typeof snap !== 'object') throw new HistoryTransactionError(NOT_AN_OBJECT);
  const r = snap as { type?: unknown; items?: unknown; expectedSuffix?: unknown; replacement?: unknown };
  const has = (k: string) => Object.prototype.hasOwnProperty.call(r, k);
  if (r.type === 'append_items') {
    if (Object.keys(r).length !== 2 || !has('items') || !Array.isArray(r.items))
      throw new HistoryTransactionError('Session history append transaction fields are invalid.');
    return { type: 'append_items', items: itemsOf(r.items) };
  }
  if (r.type !== 'replace_suffix') throw new HistoryTransactionError('Unsupported session history transaction type.');
  if (Object.keys(r).length !== 3 || !Array.isArray(r.expectedSuffix) || !Array.isArray(r.replacement))
    throw new HistoryTransactionError('Session history suffix transaction fields are invalid.');
  return { type: 'replace_suffix', expectedSuffix: itemsOf(r.expectedSuffix), replacement: itemsOf(r.replacement) };
}

/** Items are objects (the service checks their shape against the format: a 400 becomes the same message). */
function itemsOf(list: unknown[]): unknown[] {
  if (list.some((it) => typeof it !== 'object' || it === null || Array.isArray(it) || it instanceof Uint8Array))
    throw new HistoryTransactionError(INVALID_ITEMS);
  return list;
}

/** A detached copy of a value the SDK can snapshot; throws (any message: the caller replaces it) otherwise. */
function snapshotValue(value: unknown, ancestors: WeakSet<object>): unknown {
  if (value === null || value === undefined || typeof value === 'string' || typeof value === 'boolean' || typeof value === 'number')
    return value;
  if (typeof value !== 'object') throw new Error('unsupported');
  if (value instanceof Uint8Array) {
    const keys = Reflect.ownKeys(value);
    if (keys.length !== value.length || keys.some((k) => typeof k !== 'string' || !isIndex(k, value.length))) throw new Error('binary');
    return new Uint8Array(value);
  }
  if (ancestors.has(value)) throw new Error('cycle');
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const length = Object.getOwnPropertyDescriptor(value, 'length');
      if (!length || !('value' in length)) throw new Error('array');
      const n = length.value as number;
      const keys = Reflect.ownKeys(value);
      if (
        !Number.isSafeInteger(n) ||
        n < 0 ||
        keys.length !== n + 1 ||
        keys.some((k) => typeof k !== 'string' || (k !== 'length' && !isIndex(k, n)))
      )
        throw new Error('array');
      const out = new Array<unknown>(n);
      for (let i = 0; i < n; i++) {
        const d = Object.getOwnPropertyDescriptor(value, String(i));
        if (!d?.enumerable || !('value' in d)) throw new Error('array item');
        out[i] = snapshotValue(d.value, ancestors);
      }
      return out;
    }
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw new Error('object');
    const out: Record<string, unknown> = {};
    for (const key of Reflect.ownKeys(value)) {
      if (typeof key !== 'string') throw new Error('property');
      const d = Object.getOwnPropertyDescriptor(value, key);
      if (!d?.enumerable || !('value' in d)) throw new Error('property');
      Object.defineProperty(out, key, { configurable: true, enumerable: true, writable: true, value: snapshotValue(d.value, ancestors) });
    }
    return out;
  } finally {
    ancestors.delete(value);
  }
}

function isIndex(key: string, length: number): boolean {
  if (!/^(0|[1-9]\d*)$/.test(key)) return false;
  const i = Number(key);
  return Number.isSafeInteger(i) && i < length;
}
