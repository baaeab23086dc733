// The capacity model of bench/capacity (issue 15) applies DynamoDB's published rules: item
// sizes, 1 KB write / 4 KB read units, transactional 2x, GSI enter / leave / move / update.
import { describe, expect, it } from 'vitest';
import { chargeRead, chargeWrite } from './capacity-rules.js';
import { indexEntry, itemSize, numberSize } from './item-size.js';
import { indexNamed, tableModel } from './table-model.js';

const model = tableModel();
const s = (x: string) => ({ S: x });
const meta = (extra: Record<string, { S: string } | { N: string }> = {}) => ({
  pk: s('T#t#S#a'),
  sk: s('META'),
  version: { N: '3' },
  ...extra,
});

describe('capacity rules (bench/capacity)', () => {
  it('item sizes: names + values; numbers by significant digits; maps and lists carry 3 bytes + 1 per element', () => {
    expect(numberSize('12345')).toBe(4);
    expect(numberSize('1000')).toBe(2);
    expect(numberSize('-0.05')).toBe(2);
    expect(itemSize({ ab: s('xyz') })).toBe(5);
    expect(itemSize({ m: { M: { k: s('v') } } })).toBe(1 + 3 + 1 + 1 + 1);
    expect(itemSize({ l: { L: [s('a'), { BOOL: true }] } })).toBe(1 + 3 + (1 + 1) + (1 + 1));
  });

  it('a write costs 1 WCU per started KB of the larger image, 2x in a transaction', () => {
    const small = { pk: s('T#t#S#a'), sk: s('MSG#1'), body: s('x'.repeat(900)) };
    const big = { ...small, body: s('x'.repeat(1100)) };
    expect(chargeWrite(model, 'put', 'T#t#S#a', undefined, small, false)).toEqual([expect.objectContaining({ target: 'table', wcu: 1 })]);
    expect(chargeWrite(model, 'put', 'T#t#S#a', big, small, false)[0]!.wcu).toBe(2);
    expect(chargeWrite(model, 'put', 'T#t#S#a', undefined, big, true)[0]!.wcu).toBe(4);
    expect(chargeWrite(model, 'delete', 'T#t#S#a', undefined, undefined, false)[0]!.wcu).toBe(1);
  });

  it('a sparse GSI: entering is a put, leaving a delete, a moved key a delete + put, an unprojected change free', () => {
    const inFlight = meta({ attemptShard: s('A#3'), leaseExpiresAt: { N: '100' } });
    const index = (before: object | undefined, after: object | undefined, tx = false) =>
      chargeWrite(model, 'update', 'T#t#S#a', before as never, after as never, tx).filter((c) => c.target === 'attemptsByExpiry');
    expect(index(meta(), inFlight).map((c) => [c.kind, c.partition, c.wcu])).toEqual([['index put', 'A#3', 1]]);
    expect(index(inFlight, meta(), true).map((c) => [c.kind, c.wcu])).toEqual([['index delete', 2]]);
    expect(index(inFlight, { ...inFlight, leaseExpiresAt: { N: '200' } }).map((c) => c.kind)).toEqual(['index delete', 'index put']);
    expect(index(inFlight, { ...inFlight, version: { N: '4' } })).toEqual([]);
  });

  it('an INCLUDE index is written when a projected attribute changes, and carries only keys and projections', () => {
    const idx = indexNamed(model, 'rotationsByTime');
    const child = meta({ rotationShard: s('R#1'), createdAt: s('2026'), parentKey: s('T#t#S#p'), body: s('not projected') });
    expect(Object.keys(indexEntry(child, idx, model)!).sort()).toEqual(['createdAt', 'parentKey', 'pk', 'rotationShard', 'sk']);
    const moved = chargeWrite(model, 'update', 'T#t#S#a', child, { ...child, parentKey: s('T#t#S#q') }, false).filter(
      (c) => c.target === 'rotationsByTime',
    );
    expect(moved.map((c) => c.kind)).toEqual(['index update']);
  });

  it('reads: 4 KB units strongly consistent, half eventually (GSIs always), the minimum when nothing is found', () => {
    const item = { pk: s('p'), body: s('x'.repeat(1500)) };
    expect(chargeRead('query', 'table', 'p', [item, item, item], true).rcu).toBe(2);
    expect(chargeRead('query', 'table', 'p', [item, item, item], false).rcu).toBe(1);
    expect(chargeRead('query', 'attemptsByExpiry', 'A#1', [item, item, item], true).rcu).toBe(1);
    expect(chargeRead('get', 'table', 'p', [undefined], true).rcu).toBe(1);
    expect(chargeRead('get', 'table', 'p', [undefined], false).rcu).toBe(0.5);
  });
});
