// Pure helpers of the lineage store: chunking under transaction limits, item sizing, expressions, retries.
import { describe, expect, it } from 'vitest';
import { chunkBySize } from '../../../lib/lineage/dynamo-lineage-store.js';
import { StoreRetryableError } from '../../../lib/lineage/errors.js';
import { expression } from '../../../lib/lineage/expression.js';
import { assertMessagesFit, itemSizeBytes, MAX_MESSAGE_ITEM_BYTES, toMessageItem, fromMessageItem } from '../../../lib/lineage/items.js';
import { messageSk, sessionPk } from '../../../lib/lineage/keys.js';
import { backoffDelay, DEFAULT_RETRY, isTransient, withRetry } from '../../../lib/lineage/retry.js';
import { MessageTooLargeError } from '../../../lib/lineage/errors.js';

const named = (name: string, extra: object = {}) => Object.assign(new Error(name), { name, ...extra });

describe('chunkBySize (transaction limits: 100 items, 4 MB)', () => {
  it('splits by item count', () => {
    expect(chunkBySize(Array(250).fill(10), 99, 1e9)).toEqual([[0, 99], [99, 198], [198, 250]]);
  });
  it('splits by bytes, never producing an empty chunk', () => {
    expect(chunkBySize([3, 3, 3, 10, 1], 99, 6)).toEqual([[0, 2], [2, 3], [3, 4], [4, 5]]);
  });
  it('no messages -> no chunks', () => {
    expect(chunkBySize([], 99, 100)).toEqual([]);
  });
});

describe('item sizes', () => {
  it('counts UTF-8 bytes of names and string values', () => {
    expect(itemSizeBytes({ ab: 'é' })).toBe(2 + 2);
    expect(itemSizeBytes({ n: 5 })).toBe(1 + 21);
  });
  it('refuses a message item over the limit with its index, and accepts one just under it', () => {
    const pk = sessionPk({ tenantId: 't', sessionId: 's' });
    const fits = { role: 'user' as const, content: 'a'.repeat(MAX_MESSAGE_ITEM_BYTES - 200) };
    expect(() => assertMessagesFit(pk, 0, 1, [fits])).not.toThrow();
    const tooBig = { role: 'user' as const, content: 'a'.repeat(MAX_MESSAGE_ITEM_BYTES) };
    expect(() => assertMessagesFit(pk, 0, 1, [fits, tooBig])).toThrow(MessageTooLargeError);
    expect(MAX_MESSAGE_ITEM_BYTES).toBeLessThan(400 * 1024);
  });
  it('message items keep every client field verbatim', () => {
    const m = { role: 'assistant' as const, content: 'x', tool_calls: [{ id: '1', fn: { a: null } }], name: 'n' };
    expect(fromMessageItem(toMessageItem('pk', 3, 7, m))).toEqual(m);
  });
  it('message sort keys order by generation then sequence', () => {
    const keys = [messageSk(2, 1), messageSk(1, 10), messageSk(1, 9), messageSk(10, 1)];
    expect([...keys].sort()).toEqual([messageSk(1, 9), messageSk(1, 10), messageSk(2, 1), messageSk(10, 1)]);
  });
});

describe('expression', () => {
  it('maps #names and sends only the values used', () => {
    expect(expression({ update: 'SET #a = :x', condition: '#version = :v' }, { ':x': 1, ':v': 2, ':unused': 3 })).toEqual({
      UpdateExpression: 'SET #a = :x',
      ConditionExpression: '#version = :v',
      ExpressionAttributeNames: { '#a': 'a', '#version': 'version' },
      ExpressionAttributeValues: { ':x': 1, ':v': 2 },
    });
  });
  it('throws when a value is missing', () => {
    expect(() => expression({ condition: 'x = :missing' })).toThrow(/:missing/);
  });
});

describe('retries', () => {
  it('classifies throttling and contention as transient, condition failures as definite', () => {
    expect(isTransient(named('ThrottlingException'))).toBe(true);
    expect(isTransient(named('RequestLimitExceeded'))).toBe(true);
    expect(isTransient(named('InternalServerError'))).toBe(true);
    expect(isTransient(named('TransactionCanceledException', { CancellationReasons: [{ Code: 'TransactionConflict' }] }))).toBe(true);
    expect(
      isTransient(named('TransactionCanceledException', { CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'TransactionConflict' }] })),
    ).toBe(false);
    expect(isTransient(named('ConditionalCheckFailedException'))).toBe(false);
    expect(isTransient(named('ValidationException'))).toBe(false);
  });
  it('backoff is exponential, capped and jittered within [0, cap)', () => {
    const opts = { maxAttempts: 5, baseDelayMs: 10, maxDelayMs: 50 };
    expect([0, 1, 2, 3].map((i) => backoffDelay(i, opts, () => 0.999))).toEqual([9, 19, 39, 49]);
    expect(backoffDelay(3, opts, () => 0)).toBe(0);
  });
  it('gives up after maxAttempts with StoreRetryableError; definite errors are not retried', async () => {
    let calls = 0;
    const opts = { ...DEFAULT_RETRY, baseDelayMs: 1, maxDelayMs: 2 };
    await expect(withRetry('x', async () => { calls++; throw named('ThrottlingException'); }, opts)).rejects.toBeInstanceOf(StoreRetryableError);
    expect(calls).toBe(5);
    calls = 0;
    await expect(withRetry('x', async () => { calls++; throw named('ValidationException'); }, opts)).rejects.toThrow('ValidationException');
    expect(calls).toBe(1);
  });
});
