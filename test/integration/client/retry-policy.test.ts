// The retry arithmetic and Retry-After parsing on their own (no service): bounded, jittered,
// and a Retry-After beyond the policy's patience is handed to the caller instead of waited out.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  retryDelayMs,
  toApiError,
  ServiceUnavailableError,
  SessionEndedError,
  ConflictError,
} from '../../../lib/client/index.js';
import { resolvePolicy } from '../../../lib/client/retry.js';

describe('retry delays', () => {
  const policy = resolvePolicy({ baseDelayMs: 100, maxDelayMs: 1000, maxRetryAfterMs: 5000 });

  it('full jitter under a ceiling that doubles per retry and stops at maxDelayMs', () => {
    expect(retryDelayMs(1, policy, undefined, () => 0.999)).toBeCloseTo(99.9);
    expect(retryDelayMs(2, policy, undefined, () => 0.999)).toBeCloseTo(199.8);
    expect(retryDelayMs(3, policy, undefined, () => 0.5)).toBe(200);
    expect(retryDelayMs(10, policy, undefined, () => 0.999)).toBeCloseTo(999);
    expect(retryDelayMs(10, policy, undefined, () => 0)).toBe(0);
  });

  it('honours Retry-After with at most one base delay of jitter, and refuses one longer than maxRetryAfterMs', () => {
    expect(retryDelayMs(1, policy, 2000, () => 0)).toBe(2000);
    expect(retryDelayMs(1, policy, 2000, () => 0.999)).toBeCloseTo(2099.9);
    expect(retryDelayMs(1, policy, 5001, () => 0)).toBeUndefined();
  });

  it('rejects nonsense policies', () => {
    expect(() => resolvePolicy({ maxAttempts: 0 })).toThrow(RangeError);
    expect(() => resolvePolicy({ baseDelayMs: -1 })).toThrow(RangeError);
    expect(resolvePolicy(undefined)).toEqual(DEFAULT_RETRY_POLICY);
  });
});

describe('Retry-After', () => {
  it('reads delta-seconds and HTTP dates', () => {
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:03 GMT', now)).toBe(3000);
  });
});

describe('error mapping', () => {
  it('F1: picks the class by status, and by code for 409', () => {
    const headers = new Headers({ 'retry-after': '2' });
    expect(toApiError(503, { error: { code: 'lease_unavailable', message: 'x' } }, headers)).toBeInstanceOf(ServiceUnavailableError);
    const ended = toApiError(409, { error: { code: 'session_ended', message: 'x' }, liveSessionId: 'child' }, new Headers());
    expect(ended).toBeInstanceOf(SessionEndedError);
    expect((ended as SessionEndedError).liveSessionId).toBe('child');
    expect(toApiError(409, { error: { code: 'lineage_too_deep', message: 'x' } }, new Headers())).toBeInstanceOf(ConflictError);
    expect(toApiError(504, 'Gateway Timeout', new Headers())).toMatchObject({
      status: 504,
      code: 'unexpected_response',
      fromService: false,
    });
  });
});
