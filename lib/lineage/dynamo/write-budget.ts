// Pacing of the store's background writes (issue 35 item 6): the archive of a replaced generation
// and the purge of a deleted session rewrite or delete every row under ONE partition key, and
// DynamoDB gives one partition about 1,000 write units per second. Unpaced, archiving a 120 MB
// generation would take that partition's whole capacity for minutes and throttle the session's
// own appends and reads. Each partition gets a token bucket of `unitsPerSecond` (well under the
// 1,000), shared by every background run of this container.
import { DEFAULT_BACKGROUND_WRITE_UNITS_PER_SECOND } from '../../config.js';

/** DynamoDB's own ceiling for one partition, for the docs and the default's sizing. */
export const PARTITION_WRITE_UNITS_PER_SECOND = 1_000;
/** A bucket holds at most this share of a second's budget: bursts stay short. */
const BURST_SHARE = 0.25;
/** Buckets kept before idle (full) ones are dropped. */
const MAX_BUCKETS = 256;

export interface PacingClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const systemClock: PacingClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};

/** Write units of one item: 1 per started KB of its size (what DynamoDB charges a put, update or delete). */
export function writeUnits(item: object): number {
  return Math.max(1, Math.ceil(itemBytes(item) / 1024));
}

/** DynamoDB's item size, closely enough: attribute names plus values (strings in UTF-8, numbers about 21 bytes). */
export function itemBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (typeof value === 'number') return 21;
  if (typeof value === 'boolean' || value === null || value === undefined) return 1;
  if (Array.isArray(value)) return 3 + value.reduce((n: number, v) => n + 1 + itemBytes(v), 0);
  if (typeof value === 'object') {
    return Object.entries(value).reduce((n, [k, v]) => n + Buffer.byteLength(k, 'utf8') + itemBytes(v), 3);
  }
  return 0;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class WriteBudget {
  readonly burst: number;
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    readonly unitsPerSecond: number = DEFAULT_BACKGROUND_WRITE_UNITS_PER_SECOND,
    private readonly clock: PacingClock = systemClock,
  ) {
    if (!Number.isFinite(unitsPerSecond) || unitsPerSecond <= 0)
      throw new RangeError(`unitsPerSecond must be positive, got ${unitsPerSecond}`);
    this.burst = Math.max(1, unitsPerSecond * BURST_SHARE);
  }

  /**
   * Waits until `units` fit the partition's budget, then spends them. A write bigger than the
   * bucket goes through once the bucket is full, leaving it in debt: the next writes wait it off.
   * Concurrent callers reserve in call order, so together they stay within the budget too.
   */
  async take(partition: string, units: number): Promise<void> {
    const now = this.clock.now();
    const bucket = this.refilled(partition, now);
    const need = Math.min(units, this.burst);
    const waitMs = bucket.tokens >= need ? 0 : Math.ceil(((need - bucket.tokens) * 1000) / this.unitsPerSecond);
    bucket.tokens -= units;
    if (waitMs > 0) await this.clock.sleep(waitMs);
  }

  private refilled(partition: string, now: number): Bucket {
    let bucket = this.buckets.get(partition);
    if (!bucket) {
      if (this.buckets.size >= MAX_BUCKETS) this.dropIdle(now);
      bucket = { tokens: this.burst, at: now };
      this.buckets.set(partition, bucket);
      return bucket;
    }
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) * this.unitsPerSecond) / 1000);
    bucket.at = now;
    return bucket;
  }

  /** A bucket that has refilled is the same as no bucket. */
  private dropIdle(now: number): void {
    for (const [k, b] of this.buckets) {
      if (b.tokens + ((now - b.at) * this.unitsPerSecond) / 1000 >= this.burst) this.buckets.delete(k);
    }
  }
}
