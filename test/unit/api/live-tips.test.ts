// The container's known conversation tips (SPEC P5, K3): bounded by size and by age, so a
// conversation deleted and created again by another container is read afresh here.
import { describe, expect, it } from 'vitest';
import { LiveTips, MAX_AGE_MS, type KnownTip } from '../../../lib/api/live-tips.js';

const tip = (readAtMs: number, liveSessionId = 's-1'): KnownTip => ({ liveSessionId, rootSessionId: 'r-1', activeAtMs: 0, readAtMs });

describe('LiveTips (P5, K3)', () => {
  it('K3: a tip is used for MAX_AGE_MS after its record was read, then forgotten (the record is read again)', () => {
    let now = 1_000_000;
    const tips = new LiveTips(10, MAX_AGE_MS, () => now);
    tips.set('t', 'c', tip(now));
    now += MAX_AGE_MS;
    expect(tips.get('t', 'c')?.liveSessionId).toBe('s-1');
    // Following a rotation keeps the age of the read it came from: using a tip does not renew it.
    tips.set('t', 'c', { ...tips.get('t', 'c')!, liveSessionId: 's-2' });
    now += 1;
    expect(tips.get('t', 'c')).toBeUndefined();
    expect(tips.size).toBe(0);
  });

  it('P5: the least recently used entry goes first past the capacity', () => {
    const tips = new LiveTips(2, MAX_AGE_MS, () => 0);
    tips.set('t', 'a', tip(0));
    tips.set('t', 'b', tip(0));
    tips.get('t', 'a');
    tips.set('t', 'c', tip(0));
    expect([tips.get('t', 'a'), tips.get('t', 'b'), tips.get('t', 'c')].map((x) => x !== undefined)).toEqual([true, false, true]);
  });
});
