// Pure helpers of the lineage store: item sizing, keys, expressions, retries, cursors, legacy defaults.
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, InvalidCursorError } from '../../../lib/lineage/cursor.js';
import { ItemTooLargeError, STORE_SLOW_MESSAGE, StoreRetryableError } from '../../../lib/lineage/errors.js';
import { inPages, MAX_UNPROCESSED_ROUNDS } from '../../../lib/lineage/dynamo/batch-writes.js';
import { expression } from '../../../lib/lineage/dynamo/expression.js';
import { withDefaults, type StoredMeta } from '../../../lib/lineage/dynamo/meta-row.js';
import { chunk, encodeItems, itemsOfRow, packRows, ROW_BYTES, rowBytes, rowItems } from '../../../lib/lineage/dynamo/rows.js';
import { attemptShardOf, messageSk, parseTaskSk, refOfPk, sessionPk, taskSk } from '../../../lib/lineage/dynamo/keys.js';
import { backoffDelay, DEFAULT_RETRY, isContention, isExhaustedTransient, withRetry } from '../../../lib/lineage/dynamo/retry.js';
import { MAX_ITEM_BYTES } from '../../../lib/lineage/limits.js';

const named = (name: string, extra: object = {}) => Object.assign(new Error(name), { name, ...extra });

describe('item rows (A7)', () => {
  it('A7: refuses an item over 4,000,000 bytes of JSON with its index, and accepts one at the limit', () => {
    const at = (bytes: number) => ({ role: 'user', content: 'a'.repeat(bytes - '{"role":"user","content":""}'.length) });
    expect(() => encodeItems([at(MAX_ITEM_BYTES)], [1])).not.toThrow();
    const err = (() => {
      try {
        encodeItems([at(40), at(MAX_ITEM_BYTES + 1)], [1, 1]);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ItemTooLargeError);
    expect(err).toMatchObject({ index: 1, bytes: MAX_ITEM_BYTES + 1, limit: MAX_ITEM_BYTES });
  });
  it('A7: small items share a row, a big one spans a head and parts, and every item reads back verbatim', () => {
    const pk = sessionPk({ tenantId: 't', sessionId: 's' });
    const items = [
      { role: 'assistant', content: null, tool_calls: [{ id: '1', fn: { a: null } }], name: 'n', parts: [[{ deep: [1.5, 'é'] }]] },
      { role: 'user', content: '😀'.repeat(300_000) },
      { role: 'user', content: 'x' },
      { role: 'user', content: 'y' },
    ];
    const groups = packRows(encodeItems(items, [1, 2, 3, 4]));
    expect(groups.map((g) => g.length)).toEqual([1, 1, 2]);
    const { heads, parts } = rowItems(pk, 0, 8, groups);
    expect(heads.map((h) => h.sk)).toEqual([messageSk(0, 8), messageSk(0, 9), messageSk(0, 11)]);
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) expect(rowBytes(p)).toBeLessThan(400_000);
    const big = heads[1]!;
    const read = [
      ...itemsOfRow(heads[0]!, []),
      ...itemsOfRow(
        big,
        parts.filter((p) => p.sk.startsWith(big.sk)).map((p) => p.data!),
      ),
      ...itemsOfRow(heads[2]!, []),
    ];
    expect(read.map((r) => [r.seq, r.tokens])).toEqual([
      [8, 1],
      [9, 2],
      [10, 3],
      [11, 4],
    ]);
    expect(read.map((r) => JSON.parse(r.body) as unknown)).toEqual(items);
  });
  it('chunks never split a surrogate pair and stay within a row', () => {
    const text = 'a' + '😀'.repeat(400_000);
    const chunks = chunk(text);
    expect(chunks.join('')).toBe(text);
    for (const c of chunks) {
      expect(Buffer.byteLength(c, 'utf8')).toBeLessThanOrEqual(ROW_BYTES);
      expect(Buffer.from(c, 'utf8').toString('utf8')).toBe(c);
    }
  });
  it('a row of the one-item layout reads as a row of one item', () => {
    const [it] = itemsOfRow({ pk: 'p', sk: messageSk(0, 5), seq: 5, body: '{"role":"user","content":"hi"}', tokens: 3 }, []);
    expect(it).toMatchObject({ seq: 5, tokens: 3, row: { count: 1, partKeys: [] } });
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

describe('what a store call that failed after its retries says (issue 35 item 6)', () => {
  const opts = { ...DEFAULT_RETRY, baseDelayMs: 1, maxDelayMs: 2 };
  it('P3: a timeout or throttle past the client retries says the store was slow or throttled, not that the session is busy', async () => {
    for (const name of ['TimeoutError', 'ThrottlingException', 'ProvisionedThroughputExceededException']) {
      const err = await withRetry('read items', () => Promise.reject(named(name)), opts).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreRetryableError);
      expect((err as StoreRetryableError).publicMessage).toBe(STORE_SLOW_MESSAGE);
      expect((err as StoreRetryableError).publicMessage).not.toMatch(/busy/);
    }
  });
  it('P3: contention that outlives the bounded retries still says the session is busy', async () => {
    const err = await withRetry('commit', () => Promise.reject(named('TransactionConflictException')), opts).catch((e: unknown) => e);
    expect((err as StoreRetryableError).publicMessage).toBe('the session is busy; retry shortly');
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
