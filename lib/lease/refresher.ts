// Keeps a lease alive while an attempt works (SPEC L5). Bounded: after `cap` consecutive
// failed refreshes the lease may already be gone, so it stops and aborts `signal`; the
// attempt must then not commit. Bounded in time too (P6): past `stopAfterMs` (the invocation's
// time to answer) it refreshes no more, so an attempt that outlives its answered request (a
// stalled store, a frozen container thawed later) holds the lease at most one TTL longer.

export interface RefresherClock {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  now(): number;
}

// Looks the globals up at call time, so vitest fake timers apply too.
const systemClock: RefresherClock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
  now: () => Date.now(),
};

/** max(1 s, min(60 s, ttl / 2)) (SPEC L5). */
export function defaultRefreshInterval(ttlMs: number): number {
  return Math.max(1000, Math.min(60_000, ttlMs / 2));
}

/** Consecutive failures tolerated: the last one still happens within the TTL (cap * interval <= ttl). */
export function refreshFailureCap(ttlMs: number, intervalMs: number): number {
  return Math.max(1, Math.floor(ttlMs / intervalMs));
}

export interface LeaseRefresherOptions {
  /** One refresh; false or a throw counts as a failure. */
  refresh: () => Promise<boolean>;
  /**
   * A refresh the caller already started (the attempt's L6 ownership check): it is the
   * refresher's immediate first refresh, so starting costs no second Redis round (P1).
   */
  initial?: Promise<boolean>;
  ttlMs: number;
  intervalMs?: number;
  /**
   * P6: no refresh starts later than this long after construction. The attempt's request is
   * answered by then (its invocation's deadline), so the lease, and the attempt record whose
   * expiry the refreshes keep in step, lapse at most one TTL after the answer. Unset: no bound.
   */
  stopAfterMs?: number;
  clock?: RefresherClock;
  onGiveUp?: (reason: string) => void;
}

function assertPositive(name: string, v: number): void {
  if (!Number.isFinite(v) || v <= 0) throw new RangeError(`${name} must be a positive finite number, got ${v}`);
}

export class LeaseRefresher {
  readonly intervalMs: number;
  readonly cap: number;
  private readonly controller = new AbortController();
  private readonly refreshOnce: () => Promise<boolean>;
  private initial: Promise<boolean> | undefined;
  private readonly clock: RefresherClock;
  private readonly onGiveUp: ((reason: string) => void) | undefined;
  private readonly until: number;
  private started = false;
  private stopped = false;
  private failures = 0;
  private timer: unknown = undefined;
  private inFlight: Promise<void> | undefined;

  constructor(opts: LeaseRefresherOptions) {
    assertPositive('ttlMs', opts.ttlMs);
    this.intervalMs = opts.intervalMs ?? defaultRefreshInterval(opts.ttlMs);
    assertPositive('intervalMs', this.intervalMs);
    this.cap = refreshFailureCap(opts.ttlMs, this.intervalMs);
    this.refreshOnce = opts.refresh;
    this.initial = opts.initial;
    this.clock = opts.clock ?? systemClock;
    this.onGiveUp = opts.onGiveUp;
    this.until = opts.stopAfterMs === undefined ? Number.POSITIVE_INFINITY : this.clock.now() + opts.stopAfterMs;
  }

  /** Aborted (with the reason) when the refresher gave up; not aborted by stop(). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Refreshes once now, then every intervalMs. Calling it again is a no-op. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.tick();
  }

  /** Idempotent; waits for an in-flight refresh so the caller can release afterwards. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) {
      this.clock.clearTimeout(this.timer);
      this.timer = undefined;
    }
    await this.inFlight;
  }

  private tick(): void {
    this.timer = undefined;
    const startedAt = this.clock.now();
    // P6: past the invocation's deadline nothing keeps the lease alive. The ownership check
    // (`initial`) was already made, so it is still taken as the first refresh.
    if (!this.initial && startedAt >= this.until) {
      this.stopped = true;
      return;
    }
    this.inFlight = this.runOnce().then((ok) => {
      this.inFlight = undefined;
      if (this.stopped) return;
      this.failures = ok ? 0 : this.failures + 1;
      if (this.failures >= this.cap) return this.giveUp();
      // Next refresh one interval after this one started (never overlapping it).
      const wait = Math.max(0, this.intervalMs - (this.clock.now() - startedAt));
      this.timer = this.clock.setTimeout(() => this.tick(), wait);
    });
  }

  private async runOnce(): Promise<boolean> {
    const first = this.initial;
    this.initial = undefined;
    try {
      return (await (first ?? this.refreshOnce())) === true;
    } catch {
      return false;
    }
  }

  private giveUp(): void {
    this.stopped = true;
    const reason = `lease refresh failed ${this.failures} consecutive times (cap ${this.cap})`;
    this.controller.abort(new Error(reason));
    try {
      this.onGiveUp?.(reason);
    } catch {
      // The refresher must never throw; the signal already carries the news.
    }
  }
}
