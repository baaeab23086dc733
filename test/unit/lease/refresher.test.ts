// LeaseRefresher on vitest fake timers: no real sleeps (SPEC L5).
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LeaseRefresher, defaultRefreshInterval, refreshFailureCap } from '../../../lib/lease/index.js';

/** A refresh whose answers are scripted; past the script it repeats the last answer. */
function scripted(answers: Array<boolean | 'throw'>) {
  let i = 0;
  const fn = vi.fn(async () => {
    const a = answers[Math.min(i++, answers.length - 1)];
    if (a === 'throw') throw new Error('redis said no');
    return a === true;
  });
  return fn;
}

describe('defaultRefreshInterval / cap', () => {
  it.each([
    [500, 1000],
    [1000, 1000],
    [2000, 1000],
    [3000, 1500],
    [30_000, 15_000],
    [120_000, 60_000],
    [600_000, 60_000],
  ])('L5: ttl %i ms refreshes every %i ms by default', (ttl, interval) => {
    expect(defaultRefreshInterval(ttl)).toBe(interval);
  });

  it.each([1000, 1001, 1999, 2000, 2500, 10_000, 30_000, 119_999, 120_000, 120_001, 3_600_000])(
    'L5: cap * interval <= ttl for ttl %i ms with the default interval',
    (ttl) => {
      const r = new LeaseRefresher({ refresh: async () => true, ttlMs: ttl });
      expect(r.cap).toBeGreaterThanOrEqual(1);
      expect(r.cap * r.intervalMs).toBeLessThanOrEqual(ttl);
    },
  );

  it('L5: cap * interval <= ttl for any interval not above the ttl (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000 }), fc.integer({ min: 1, max: 10_000_000 }), (a, b) => {
        const [interval, ttl] = a <= b ? [a, b] : [b, a];
        const cap = refreshFailureCap(ttl, interval);
        return cap >= 1 && cap * interval <= ttl && (cap + 1) * interval > ttl;
      }),
    );
  });

  it('L5: cap has a floor of 1 when the ttl is shorter than the interval', () => {
    expect(new LeaseRefresher({ refresh: async () => true, ttlMs: 500 }).cap).toBe(1);
    expect(new LeaseRefresher({ refresh: async () => true, ttlMs: 300, intervalMs: 1000 }).cap).toBe(1);
  });

  it('L5: an explicit intervalMs overrides the default', () => {
    const r = new LeaseRefresher({ refresh: async () => true, ttlMs: 600, intervalMs: 200 });
    expect(r.intervalMs).toBe(200);
    expect(r.cap).toBe(3);
  });

  it('L5: rejects a nonsensical ttl or interval at construction', () => {
    expect(() => new LeaseRefresher({ refresh: async () => true, ttlMs: 0 })).toThrow(RangeError);
    expect(() => new LeaseRefresher({ refresh: async () => true, ttlMs: 1000, intervalMs: Number.NaN })).toThrow(RangeError);
  });
});

describe('LeaseRefresher', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('L5: refreshes once immediately on start, then once per interval', async () => {
    const refresh = scripted([true]);
    const r = new LeaseRefresher({ refresh, ttlMs: 10_000, intervalMs: 1000 });
    r.start();
    expect(refresh).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(refresh).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(refresh).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(3000);
    expect(refresh).toHaveBeenCalledTimes(5);
    await r.stop();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(refresh).toHaveBeenCalledTimes(5);
    expect(r.signal.aborted).toBe(false);
  });

  it('L5 P1: a refresh already in flight (the ownership check) is the immediate one: no second call at start', async () => {
    const refresh = scripted([true]);
    const r = new LeaseRefresher({ refresh, ttlMs: 10_000, intervalMs: 1000, initial: Promise.resolve(true) });
    r.start();
    await vi.advanceTimersByTimeAsync(999);
    expect(refresh).toHaveBeenCalledTimes(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(refresh).toHaveBeenCalledTimes(1);
    await r.stop();
  });

  it('L5: a failed initial refresh counts as a failure (cap 1 gives up at once)', async () => {
    const onGiveUp = vi.fn();
    const r = new LeaseRefresher({ refresh: scripted([true]), ttlMs: 1000, intervalMs: 1000, initial: Promise.resolve(false), onGiveUp });
    r.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(r.signal.aborted).toBe(true);
    expect(onGiveUp).toHaveBeenCalledTimes(1);
  });

  it('L5: start() twice does not start two loops', async () => {
    const refresh = scripted([true]);
    const r = new LeaseRefresher({ refresh, ttlMs: 10_000, intervalMs: 1000 });
    r.start();
    r.start();
    await vi.advanceTimersByTimeAsync(1000);
    expect(refresh).toHaveBeenCalledTimes(2);
    await r.stop();
  });

  it('L5: survives one failed refresh (false)', async () => {
    const refresh = scripted([true, false, true]);
    const r = new LeaseRefresher({ refresh, ttlMs: 4000, intervalMs: 1000 });
    r.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(refresh).toHaveBeenCalledTimes(11);
    expect(r.signal.aborted).toBe(false);
    await r.stop();
  });

  it('L5: survives one thrown refresh', async () => {
    const refresh = scripted(['throw', true]);
    const onGiveUp = vi.fn();
    const r = new LeaseRefresher({ refresh, ttlMs: 4000, intervalMs: 1000, onGiveUp });
    r.start();
    await vi.advanceTimersByTimeAsync(5000);
    expect(refresh).toHaveBeenCalledTimes(6);
    expect(r.signal.aborted).toBe(false);
    expect(onGiveUp).not.toHaveBeenCalled();
    await r.stop();
  });

  it('L5: stops after exactly cap consecutive failures, aborts the signal and calls onGiveUp once', async () => {
    const refresh = scripted([false, 'throw', false]);
    const onGiveUp = vi.fn();
    const r = new LeaseRefresher({ refresh, ttlMs: 10_000, intervalMs: 2500, onGiveUp });
    expect(r.cap).toBe(4);
    const start = Date.now();
    let abortedAt: number | undefined;
    r.signal.addEventListener('abort', () => (abortedAt = Date.now()));
    r.start();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(refresh).toHaveBeenCalledTimes(4);
    expect(r.signal.aborted).toBe(true);
    expect(r.signal.reason).toBeInstanceOf(Error);
    expect(onGiveUp).toHaveBeenCalledTimes(1);
    expect(onGiveUp.mock.calls[0]![0]).toMatch(/4 consecutive/);
    // Gave up (on the fake clock) before the lease's TTL ran out.
    expect(abortedAt! - start).toBeLessThanOrEqual(10_000);
  });

  it('L5: with cap 1 (ttl < interval) the first failure gives up', async () => {
    const refresh = scripted([false]);
    const r = new LeaseRefresher({ refresh, ttlMs: 300, intervalMs: 1000 });
    r.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(refresh).toHaveBeenCalledTimes(1);
    expect(r.signal.aborted).toBe(true);
  });

  it('L5: a success resets the consecutive failure count', async () => {
    // cap 3: two failures, a success, two failures, a success... never three in a row.
    const pattern: Array<boolean | 'throw'> = [];
    for (let i = 0; i < 10; i++) pattern.push(false, 'throw', true);
    const refresh = scripted([...pattern, false]);
    const r = new LeaseRefresher({ refresh, ttlMs: 3000, intervalMs: 1000 });
    r.start();
    await vi.advanceTimersByTimeAsync(29_000);
    expect(refresh).toHaveBeenCalledTimes(30);
    expect(r.signal.aborted).toBe(false);
    // Past the pattern every answer is false: gives up after exactly 3 more calls.
    await vi.advanceTimersByTimeAsync(30_000);
    expect(refresh).toHaveBeenCalledTimes(33);
    expect(r.signal.aborted).toBe(true);
  });

  it('L5: never overlaps two refreshes; the next one waits for a slow one', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    let finish: (ok: boolean) => void = () => undefined;
    const refresh = vi.fn(
      () =>
        new Promise<boolean>((resolve) => {
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          finish = (ok) => {
            inFlight--;
            resolve(ok);
          };
        }),
    );
    const r = new LeaseRefresher({ refresh, ttlMs: 10_000, intervalMs: 1000 });
    r.start();
    await vi.advanceTimersByTimeAsync(5000);
    expect(refresh).toHaveBeenCalledTimes(1);
    finish(true);
    await vi.advanceTimersByTimeAsync(0); // already an interval late: the next one runs now
    expect(refresh).toHaveBeenCalledTimes(2);
    finish(true);
    await vi.advanceTimersByTimeAsync(999);
    expect(refresh).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(refresh).toHaveBeenCalledTimes(3);
    finish(true);
    await r.stop();
    expect(maxInFlight).toBe(1);
  });

  it('L5: stop() waits for an in-flight refresh, then no refresh follows', async () => {
    let finish: (ok: boolean) => void = () => undefined;
    const refresh = vi.fn(() => new Promise<boolean>((resolve) => (finish = resolve)));
    const r = new LeaseRefresher({ refresh, ttlMs: 10_000, intervalMs: 1000 });
    r.start();
    let stopped = false;
    const stopping = r.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    finish(true);
    await stopping;
    expect(stopped).toBe(true);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(refresh).toHaveBeenCalledTimes(1);
  });

  it('L5: stop() is idempotent, safe before start and after giving up', async () => {
    const unstarted = new LeaseRefresher({ refresh: async () => true, ttlMs: 1000 });
    await unstarted.stop();
    unstarted.start(); // start after stop does nothing
    await vi.advanceTimersByTimeAsync(5000);

    const refresh = scripted([false]);
    const r = new LeaseRefresher({ refresh, ttlMs: 1000, intervalMs: 1000 });
    r.start();
    await vi.advanceTimersByTimeAsync(5000);
    expect(r.signal.aborted).toBe(true);
    await r.stop();
    await r.stop();
    await Promise.all([r.stop(), r.stop()]);
    expect(refresh).toHaveBeenCalledTimes(1);
  });

  it('L5: an onGiveUp that throws is swallowed; the signal still aborts', async () => {
    const r = new LeaseRefresher({
      refresh: async () => false,
      ttlMs: 1000,
      onGiveUp: () => {
        throw new Error('listener bug');
      },
    });
    r.start();
    await vi.advanceTimersByTimeAsync(5000);
    expect(r.signal.aborted).toBe(true);
    await expect(r.stop()).resolves.toBeUndefined();
  });

  it('P6: no refresh starts past stopAfterMs (the invocation answered), so the lease lapses one TTL after it; the signal stays clear', async () => {
    const refresh = scripted([true]);
    const r = new LeaseRefresher({ refresh, ttlMs: 10_000, intervalMs: 1000, stopAfterMs: 2500 });
    r.start();
    await vi.advanceTimersByTimeAsync(2000);
    // At 0, 1000 and 2000 ms; the tick at 3000 ms is past the bound.
    expect(refresh).toHaveBeenCalledTimes(3);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(refresh).toHaveBeenCalledTimes(3);
    // Not a give-up: an attempt already committing is not told its lease was lost.
    expect(r.signal.aborted).toBe(false);
    await expect(r.stop()).resolves.toBeUndefined();
  });

  it('P6: a bound already past still takes the ownership check as the first refresh, and starts none of its own', async () => {
    const refresh = scripted([true]);
    const r = new LeaseRefresher({ refresh, ttlMs: 10_000, intervalMs: 1000, stopAfterMs: -1, initial: Promise.resolve(true) });
    r.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(refresh).toHaveBeenCalledTimes(0);
    await r.stop();
  });

  it('L5: uses an injected clock instead of the global timers', async () => {
    vi.useRealTimers();
    const pending: Array<{ fn: () => void; ms: number }> = [];
    const clock = {
      setTimeout: (fn: () => void, ms: number) => pending.push({ fn, ms }),
      clearTimeout: () => undefined,
      now: () => 0,
    };
    const refresh = scripted([false]);
    const r = new LeaseRefresher({ refresh, ttlMs: 2000, intervalMs: 1000, clock });
    r.start();
    await vi.waitFor(() => expect(pending).toHaveLength(1));
    expect(pending[0]!.ms).toBe(1000);
    pending.shift()!.fn();
    await vi.waitFor(() => expect(r.signal.aborted).toBe(true));
    expect(refresh).toHaveBeenCalledTimes(2);
    expect(pending).toHaveLength(0);
  });
});
