// Activity heartbeat (SPEC C5): while a compaction runs, the session's activity mark is
// touched so watchdogs watching it do not mistake a long summarization for a dead agent.
import { ACTIVITY_LABELS } from './types.js';

export const DEFAULT_HEARTBEAT_INTERVAL_MS = 60_000;

/** A configured interval that is not a finite positive number falls back to 60 s. */
export function heartbeatIntervalMs(configured: unknown): number {
  return typeof configured === 'number' && Number.isFinite(configured) && configured > 0
    ? configured
    : DEFAULT_HEARTBEAT_INTERVAL_MS;
}

export type Touch = (label: string) => Promise<void> | void;

export class ActivityHeartbeat {
  readonly intervalMs: number;
  readonly #touch: Touch;
  #timer: NodeJS.Timeout | undefined;
  #running = false;

  constructor(touch: Touch, intervalMs?: unknown) {
    this.#touch = touch;
    this.intervalMs = heartbeatIntervalMs(intervalMs);
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    void this.#safeTouch(ACTIVITY_LABELS.started);
    this.#timer = setInterval(() => void this.#safeTouch(ACTIVITY_LABELS.inProgress), this.intervalMs);
    // A heartbeat must never keep a process alive on its own.
    this.#timer.unref();
  }

  /** Stops the ticks and writes the final mark; never throws. Idempotent. */
  async stop(outcome: 'completed' | 'failed'): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#safeTouch(outcome === 'completed' ? ACTIVITY_LABELS.completed : ACTIVITY_LABELS.failed);
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
