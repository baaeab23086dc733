// Activity heartbeat (SPEC C5): while the compressor runs, the session's activity mark is
// touched "compaction in progress" every interval, so watchdogs watching it do not mistake a
// long summarization for a dead agent. The first and last marks ride on writes the attempt makes
// anyway (P1): "compaction started" on beginAttempt's update, "compaction completed" on the
// commit transaction (or on the update that clears an attempt that did not commit), "compaction
// failed" on that update after an error.
import { ACTIVITY_LABELS } from './types.js';

export const DEFAULT_HEARTBEAT_INTERVAL_MS = 60_000;
/** stop() waits at most this long for a touch in flight, so a hung store cannot hold the attempt (and its lease). */
export const HEARTBEAT_STOP_WAIT_MS = 5_000;

function bounded(p: Promise<void> | undefined, ms: number): Promise<void> {
  if (!p) return Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

/** A configured interval that is not a finite positive number falls back to 60 s. */
export function heartbeatIntervalMs(configured: unknown): number {
  return typeof configured === 'number' && Number.isFinite(configured) && configured > 0 ? configured : DEFAULT_HEARTBEAT_INTERVAL_MS;
}

export type Touch = (label: string) => Promise<void> | void;

export class ActivityHeartbeat {
  readonly intervalMs: number;
  readonly #touch: Touch;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  // One touch at a time: a lagging tick must never land after the final mark.
  #inFlight: Promise<void> | undefined;

  constructor(touch: Touch, intervalMs?: unknown) {
    this.#touch = touch;
    this.intervalMs = heartbeatIntervalMs(intervalMs);
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#timer = setInterval(() => this.#send(ACTIVITY_LABELS.inProgress), this.intervalMs);
    // A heartbeat must never keep a process alive on its own.
    this.#timer.unref();
  }

  /** Stops the ticks and waits (bounded) for one in flight, so the caller's final mark lands last. Never throws. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await bounded(this.#inFlight, HEARTBEAT_STOP_WAIT_MS);
  }

  // A tick while the previous touch is still running is skipped, not queued.
  #send(label: string): void {
    if (this.#inFlight || !this.#running) return;
    this.#inFlight = this.#safeTouch(label).finally(() => {
      this.#inFlight = undefined;
    });
  }

  // A failing touch (thrown or rejected) never affects the attempt.
  async #safeTouch(label: string): Promise<void> {
    try {
      await this.#touch(label);
    } catch {
      /* best effort by contract (C5) */
    }
  }
}
