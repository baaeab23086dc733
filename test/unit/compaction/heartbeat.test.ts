import { describe, expect, it } from 'vitest';
import { ActivityHeartbeat, heartbeatIntervalMs } from '../../../lib/compaction/heartbeat.js';
import { ACTIVITY_LABELS } from '../../../lib/compaction/types.js';

async function waitFor(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('ActivityHeartbeat', () => {
  it.each([[Number.NaN], [Number.POSITIVE_INFINITY], [Number.NEGATIVE_INFINITY], [0], [-1], ['abc'], ['100'], [undefined], [null]])(
    'C5: interval %s falls back to 60 s',
    (v) => {
      expect(heartbeatIntervalMs(v)).toBe(60_000);
      expect(new ActivityHeartbeat(() => undefined, v).intervalMs).toBe(60_000);
    },
  );

  it('C5: a finite positive interval is kept', () => {
    expect(heartbeatIntervalMs(250)).toBe(250);
    expect(heartbeatIntervalMs(0.5)).toBe(0.5);
  });

  it("C5: in progress every interval while running; nothing after stop (the first and last marks ride on the attempt's own writes)", async () => {
    const calls: string[] = [];
    const hb = new ActivityHeartbeat((l) => void calls.push(l), 10);
    hb.start();
    await waitFor(() => calls.length >= 2, 'two in-progress ticks');
    await hb.stop();
    const n = calls.length;
    expect(calls.every((c) => c === ACTIVITY_LABELS.inProgress)).toBe(true);
    // Stopped means stopped: no more ticks.
    await new Promise((r) => setTimeout(r, 50));
    expect(calls.length).toBe(n);
  });

  it('C5: the fallback interval heartbeat writes nothing when stopped at once; stop is idempotent', async () => {
    const calls: string[] = [];
    const hb = new ActivityHeartbeat((l) => void calls.push(l), Number.POSITIVE_INFINITY);
    hb.start();
    await hb.stop();
    await hb.stop();
    expect(calls).toEqual([]);
  });

  it('C5: touches that throw or reject never escape', async () => {
    let n = 0;
    const hb = new ActivityHeartbeat((l) => {
      n++;
      if (l === ACTIVITY_LABELS.inProgress) return Promise.reject(new Error('touch rejected'));
      throw new Error('touch boom');
    }, 5);
    expect(() => hb.start()).not.toThrow();
    await waitFor(() => n >= 3, 'a few touches');
    await expect(hb.stop()).resolves.toBeUndefined();
  });
});

describe('ActivityHeartbeat ordering', () => {
  it("C5: stop waits for a slow in-progress touch, so the caller's final mark (written after stop) lands last", async () => {
    const landed: string[] = [];
    let releaseSlow: (() => void) | undefined;
    const hb = new ActivityHeartbeat(async (l) => {
      if (!releaseSlow) await new Promise<void>((r) => (releaseSlow = r));
      landed.push(l);
    }, 5);
    hb.start();
    await waitFor(() => releaseSlow !== undefined, 'a slow in-progress touch');
    const stopping = hb.stop().then(() => landed.push(ACTIVITY_LABELS.completed));
    setTimeout(() => releaseSlow!(), 30);
    await stopping;
    expect(landed).toEqual([ACTIVITY_LABELS.inProgress, ACTIVITY_LABELS.completed]);
  });
});
