// Typed lease errors. Only "no quorum because nodes are unreachable" is an error;
// a lease held by someone else is a normal result (SPEC L2).
import { ServiceError } from '../errors.js';

/** What the API answers when no quorum of Redis nodes decides (C2, F1). */
export const LEASE_UNAVAILABLE_MESSAGE = 'the lease backend (Redis) is unavailable; retry shortly';

/** No majority of Redis nodes answered; the caller must skip the attempt (SPEC L4, C2). */
export class LeaseUnavailableError extends ServiceError {
  override readonly name = 'LeaseUnavailableError';
  constructor(
    readonly sessionKey: string,
    /** One message per node that failed to vote (unreachable, script error, bad reply). */
    readonly nodeErrors: readonly string[],
  ) {
    super(`lease backend unavailable for ${sessionKey}: no quorum (${nodeErrors.join('; ') || 'no node answered'})`, {
      status: 503,
      code: 'lease_unavailable',
      retryable: true,
      publicMessage: LEASE_UNAVAILABLE_MESSAGE,
    });
  }
}

/** A Redis node too old for `SET key value NX PX ttl GET` (Redis 7.0), which acquire relies on (SPEC P2). */
export class RedisVersionError extends ServiceError {
  override readonly name = 'RedisVersionError';
  constructor(
    readonly node: string,
    readonly version: string,
  ) {
    super(`Redis node ${node} runs ${version}; the lease needs Redis >= 7.0 (SET ... NX PX ... GET)`, { status: 500, code: 'internal' });
  }
}
