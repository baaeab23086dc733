// Per-tenant limits (issue 22 finding 5): one tenant's flood must not slow another's requests.
// rate-limiter-flexible counts on the Redis nodes the lease already uses; each tenant's counters
// live on one node, picked by a hash of the tenant id, so the tenants spread over the nodes and a
// counter is one round trip. Three limits: requests per second (every route), compressions per
// minute (POST .../compress, on top of the first) and request body bytes per second (issue 35
// item 5: a tenant must not buy another's latency with big bodies at a modest request rate).
//
// The limiter never decides correctness, so when its node is down, stalled or answers an error the
// request goes through (fail open): reads and appends never depend on Redis, and a compress still
// meets its own lease rule (C2: no quorum, 503 lease_unavailable).
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes, RLWrapperTimeouts, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Logger } from '../logger.js';
import { errorFields } from '../errors.js';
import { HttpError } from './errors.js';

export type LimitKind = 'request' | 'compress' | 'bytes';

export interface TenantLimitSettings {
  /** Requests per second per tenant, every route; 0 turns the limit off. */
  requestsPerSecond: number;
  /** Compress requests per minute per tenant; 0 turns the limit off. */
  compressionsPerMinute: number;
  /** Request body bytes per second per tenant; 0 (or unset) turns the limit off. */
  bodyBytesPerSecond?: number;
  /** The largest body accepted (413 above it): the byte budget's window holds at least one. */
  maxBodyBytes?: number;
  /** A counter that has not answered in this long lets the request through. */
  timeoutMs?: number;
}

/** What the HTTP app asks before running a route; throws a 429 HttpError when over a limit. */
export interface TenantLimiter {
  /** `bodyBytes` is spent from the byte budget when `kinds` has 'bytes'. */
  check(tenantId: string, kinds: readonly LimitKind[], bodyBytes?: number): Promise<void>;
}

export const DEFAULT_LIMIT_TIMEOUT_MS = 150;

/** Each limit, the setting that raises it, and its unit (a 429 names both: issue 34). */
export const LIMIT_SETTINGS: Record<LimitKind, { limit: string; setting: string; unit: string }> = {
  request: { limit: 'requests_per_second', setting: 'RATE_LIMIT_REQUESTS_PER_SECOND', unit: 'requests per second' },
  compress: { limit: 'compressions_per_minute', setting: 'RATE_LIMIT_COMPRESSIONS_PER_MINUTE', unit: 'compressions per minute' },
  bytes: { limit: 'body_bytes_per_second', setting: 'RATE_LIMIT_BODY_BYTES_PER_SECOND', unit: 'request body bytes per second' },
};

export function rateLimited(kind: LimitKind, msBeforeNext: number, points?: number): HttpError {
  const seconds = Math.max(1, Math.ceil(msBeforeNext / 1000));
  const { limit, setting, unit } = LIMIT_SETTINGS[kind];
  const of = points === undefined ? unit : `${points} ${unit}`;
  return new HttpError(
    429,
    'rate_limited',
    `this tenant is over its limit of ${of} (${setting}); retry after ${seconds} s, or raise ${setting} (0 turns it off)`,
    { limit, setting, ...(points === undefined ? {} : { value: points }) },
    { 'retry-after': String(seconds) },
  );
}

export class RedisTenantLimiter implements TenantLimiter {
  readonly #limiters: Record<LimitKind, RateLimiterAbstract[] | undefined>;
  readonly #log: Logger | undefined;
  readonly #points: Record<LimitKind, number>;
  /** Checks that let a request through because a counter could not answer (fail open). */
  failedOpen = 0;

  constructor(clients: readonly Redis[], settings: TenantLimitSettings, log?: Logger) {
    if (clients.length === 0) throw new Error('RedisTenantLimiter needs at least one Redis client');
    const timeoutMs = settings.timeoutMs ?? DEFAULT_LIMIT_TIMEOUT_MS;
    const make = (keyPrefix: string, points: number, duration: number) =>
      points <= 0
        ? undefined
        : clients.map(
            (storeClient) =>
              new RLWrapperTimeouts({
                limiter: new RateLimiterRedis({ storeClient, keyPrefix, points, duration, rejectIfRedisNotReady: true }),
                timeoutMs,
              }),
          );
    this.#limiters = {
      request: make('limit:rps', settings.requestsPerSecond, 1),
      compress: make('limit:cpm', settings.compressionsPerMinute, 60),
      bytes: byteWindow(settings, make),
    };
    this.#points = {
      request: settings.requestsPerSecond,
      compress: settings.compressionsPerMinute,
      bytes: settings.bodyBytesPerSecond ?? 0,
    };
    this.#log = log;
  }

  async check(tenantId: string, kinds: readonly LimitKind[], bodyBytes = 0): Promise<void> {
    const node = nodeOf(tenantId, this.#limiters.request?.length ?? this.#limiters.compress?.length ?? this.#limiters.bytes?.length ?? 1);
    // In order: a request refused per second never spends a compression.
    for (const kind of kinds) {
      const limiter = this.#limiters[kind]?.[node];
      if (!limiter || (kind === 'bytes' && bodyBytes <= 0)) continue;
      try {
        await limiter.consume(tenantId, kind === 'bytes' ? bodyBytes : 1);
      } catch (err) {
        if (err instanceof RateLimiterRes) throw rateLimited(kind, err.msBeforeNext, this.#points[kind]);
        this.failedOpen++;
        this.#log?.warn('tenant limit unavailable; request let through', { tenantId, kind, node, error: errorFields(err) });
      }
    }
  }
}

/**
 * The byte budget's counter: `bodyBytesPerSecond` per second, counted over a window long enough to
 * hold the largest body accepted (a counter smaller than one body would refuse it for ever).
 */
function byteWindow<T>(
  settings: TenantLimitSettings,
  make: (keyPrefix: string, points: number, duration: number) => T | undefined,
): T | undefined {
  const perSecond = settings.bodyBytesPerSecond ?? 0;
  if (perSecond <= 0) return undefined;
  const seconds = Math.max(1, Math.ceil((settings.maxBodyBytes ?? 0) / perSecond));
  return make('limit:bps', perSecond * seconds, seconds);
}

/** The node that counts a tenant's requests: stable across containers, spread across tenants. */
export function nodeOf(tenantId: string, nodes: number): number {
  return createHash('sha256').update(tenantId).digest().readUInt32BE(0) % nodes;
}
