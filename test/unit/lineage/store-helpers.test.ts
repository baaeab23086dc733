// Pure helpers of the lineage store: item sizing, keys, expressions, retries, cursors, legacy defaults.
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, InvalidCursorError } from '../../../lib/lineage/cursor.js';
import { ItemTooLargeError, StoreRetryableError } from '../../../lib/lineage/errors.js';
import { inPages, MAX_UNPROCESSED_ROUNDS } from '../../../lib/lineage/dynamo/batch-writes.js';
import { expression } from '../../../lib/lineage/dynamo/expression.js';
import {
  atPosition,
  fromMessageItem,
  itemSizeBytes,
  messageItemsFor,
  toMessageItem,
  withDefaults,
  type StoredMeta,
} from '../../../lib/lineage/dynamo/items.js';
import { attemptShardOf, messageSk, parseTaskSk, refOfPk, sessionPk, taskSk } from '../../../lib/lineage/dynamo/keys.js';
import { backoffDelay, DEFAULT_RETRY, isContention, isExhaustedTransient, withRetry } from '../../../lib/lineage/dynamo/retry.js';
import { MAX_ITEM_BYTES } from '../../../lib/lineage/limits.js';

const named = (name: string, extra: object = {}) => Object.assign(new Error(name), { name, ...extra });

describe('item sizes', () => {
  it('counts UTF-8 bytes of names and string values', () => {
    expect(itemSizeBytes({ ab: 'é' })).toBe(2 + 2);
    expect(itemSizeBytes({ n: 5 })).toBe(1 + 21);
  });
  it('refuses an item over the limit with its index, and accepts one just under it', () => {
    const pk = sessionPk({ tenantId: 't', sessionId: 's' });
    const fits = { role: 'user', content: 'a'.repeat(MAX_ITEM_BYTES - 200) };
    expect(() => messageItemsFor(pk, 0, 1, [fits], [1])).not.toThrow();
    const tooBig = { role: 'user', content: 'a'.repeat(MAX_ITEM_BYTES) };
    expect(() => messageItemsFor(pk, 0, 1, [fits, tooBig], [1, 1])).toThrow(ItemTooLargeError);
    expect(MAX_ITEM_BYTES).toBeLessThan(400 * 1024);
  });
  it('items keep every client field verbatim, null content and nested parts included', () => {
    const m = { role: 'assistant', content: null, tool_calls: [{ id: '1', fn: { a: null } }], name: 'n', parts: [[{ deep: [1.5, 'é'] }]] };
    expect(fromMessageItem(toMessageItem('pk', 3, 7, m, 4))).toEqual(m);
  });
  it('A4: an append measured once stays the same size at any position a lost race moves it to', () => {
    const pk = sessionPk({ tenantId: 't', sessionId: 's' });
    const items = [
      { role: 'user', content: 'é'.repeat(50) },
      { role: 'assistant', content: null },
    ];
    const { stored } = messageItemsFor(pk, 0, 1, items, [3, 1]);
    const moved = atPosition(stored, 4_000_000, 9_876_543_210);
    expect(moved.map((m) => [m.sk, m.generation, m.seq])).toEqual([
      [messageSk(4_000_000, 9_876_543_210), 4_000_000, 9_876_543_210],
      [messageSk(4_000_000, 9_876_543_211), 4_000_000, 9_876_543_211],
    ]);
    expect(moved.map((m) => itemSizeBytes({ ...m, expiresAt: 0 }))).toEqual(stored.map((m) => itemSizeBytes({ ...m, expiresAt: 0 })));
    expect(moved.map(fromMessageItem)).toEqual(items);
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
  it('our loop retries contention only; what the SDK already retried surfaces as retryable; condition failures are answers', () => {
    expect(isContention(named('TransactionConflictException'))).toBe(true);
    expect(isContention(named('TransactionCanceledException', { CancellationReasons: [{ Code: 'TransactionConflict' }] }))).toBe(true);
    expect(
      isContention(named('TransactionCanceledException', { CancellationReasons: [{ Code: 'ThrottlingError' }, { Code: 'None' }] })),
    ).toBe(true);
    expect(
      isContention(
        named('TransactionCanceledException', {
          CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'TransactionConflict' }],
        }),
      ),
    ).toBe(false);
    expect(isContention(named('ThrottlingException'))).toBe(false);
    for (const n of ['ThrottlingException', 'RequestLimitExceeded', 'InternalServerError', 'TimeoutError'])
      expect(isExhaustedTransient(named(n)), n).toBe(true);
    expect(isExhaustedTransient(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))).toBe(true);
    expect(isExhaustedTransient(named('X', { $metadata: { httpStatusCode: 503 } }))).toBe(true);
    expect(isExhaustedTransient(named('ConditionalCheckFailedException'))).toBe(false);
    expect(isExhaustedTransient(named('ValidationException', { $metadata: { httpStatusCode: 400 } }))).toBe(false);
  });
  it('backoff is exponential, capped and jittered within [0, cap)', () => {
    const opts = { maxAttempts: 5, baseDelayMs: 10, maxDelayMs: 50 };
    expect([0, 1, 2, 3].map((i) => backoffDelay(i, opts, () => 0.999))).toEqual([9, 19, 39, 49]);
    expect(backoffDelay(3, opts, () => 0)).toBe(0);
  });
  it('gives up after maxAttempts with StoreRetryableError; an exhausted throttle is not retried again; definite errors pass through', async () => {
    let calls = 0;
    const opts = { ...DEFAULT_RETRY, baseDelayMs: 1, maxDelayMs: 2 };
    await expect(
      withRetry(
        'x',
        async () => {
          calls++;
          throw named('TransactionConflictException');
        },
        opts,
      ),
    ).rejects.toBeInstanceOf(StoreRetryableError);
    expect(calls).toBe(5);
    calls = 0;
    await expect(
      withRetry(
        'x',
        async () => {
          calls++;
          throw named('ThrottlingException');
        },
        opts,
      ),
    ).rejects.toBeInstanceOf(StoreRetryableError);
    expect(calls).toBe(1);
    calls = 0;
    await expect(
      withRetry(
        'x',
        async () => {
          calls++;
          throw named('ValidationException');
        },
        opts,
      ),
    ).rejects.toThrow('ValidationException');
    expect(calls).toBe(1);
  });
});

describe('batch pages (unprocessed items re-sent)', () => {
  const fast = { ...DEFAULT_RETRY, baseDelayMs: 1, maxDelayMs: 2 };

  it('sends page by page and re-sends what a call left unprocessed until none is left', async () => {
    const sent: number[][] = [];
    const leftOnce = new Set([3, 7]);
    await inPages('batch test', [1, 2, 3, 4, 5, 6, 7], 4, fast, async (pending) => {
      sent.push(pending);
      const left = pending.filter((n) => leftOnce.has(n));
      left.forEach((n) => leftOnce.delete(n));
      return left;
    });
    expect(sent).toEqual([[1, 2, 3, 4], [3], [5, 6, 7], [7]]);
  });

  it('gives up with StoreRetryableError after MAX_UNPROCESSED_ROUNDS calls on one page', async () => {
    let calls = 0;
    const run = inPages('batch test', [1, 2], 25, fast, async (pending) => {
      calls++;
      return pending.slice(0, 1);
    });
    await expect(run).rejects.toBeInstanceOf(StoreRetryableError);
    await expect(run).rejects.toThrow('batch test: 1 items unprocessed');
    expect(calls).toBe(MAX_UNPROCESSED_ROUNDS);
  });
});

describe('keys', () => {
  it('session pks parse back to their ref', () => {
    expect(refOfPk(sessionPk({ tenantId: 'acme', sessionId: 'abc-1' }))).toEqual({ tenantId: 'acme', sessionId: 'abc-1' });
    expect(() => refOfPk('APIKEY#x')).toThrow();
  });
  it('task sort keys parse back to kind and generation', () => {
    expect(parseTaskSk(taskSk('archive', 42))).toEqual({ kind: 'archive', generation: 42 });
    expect(parseTaskSk('META')).toBeNull();
  });
  it('attempt shards spread over every shard value', () => {
    const seen = new Set(Array.from({ length: 2000 }, (_, i) => attemptShardOf(`T#t#S#${i}`, 64)));
    expect(seen.size).toBe(64);
  });
});

describe('legacy records (C3)', () => {
  it('withDefaults fills counters and assembles the attempt from top-level fence and watermark', () => {
    const meta = withDefaults({
      pk: 'p',
      sk: 'META',
      tenantId: 't',
      sessionId: 's',
      createdAt: 'x',
      fence: 4,
      attemptWatermark: 9,
      attempt: { attemptId: 'a', holder: 'h', startedAt: 'x', leaseExpiresAt: 1, pendingChildId: 'c' },
    } as unknown as StoredMeta);
    expect(meta).toMatchObject({ generation: 0, messageCount: 0, lastSeq: 0, tokenEstimate: 0, version: 0 });
    expect(meta.attempt).toMatchObject({ fence: 4, watermark: 9 });
  });
});

describe('cursors (A5)', () => {
  it('round-trip for the session they were issued for, and are refused anywhere else', () => {
    const c = encodeCursor('t', 's', { generation: 3, afterSeq: 120 });
    expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor('t', 's', c)).toEqual({ generation: 3, afterSeq: 120 });
    expect(() => decodeCursor('t', 'other', c)).toThrow(InvalidCursorError);
    expect(() => decodeCursor('t2', 's', c)).toThrow(InvalidCursorError);
  });
  it.each(['', 'not base64!', Buffer.from('{"v":1}').toString('base64url'), Buffer.from('[]').toString('base64url'), 'x'.repeat(500)])(
    'A5: a malformed cursor %# is InvalidCursorError',
    (bad) => {
      expect(() => decodeCursor('t', 's', bad)).toThrow(InvalidCursorError);
    },
  );
});
