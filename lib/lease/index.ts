// Public surface of the session lease (SPEC L1-L7).
export { SessionLease, DEFAULT_LEASE_KEY_PREFIX, newLeaseToken, assertRedisVersion } from './session-lease.js';
export type { SessionLeaseOptions, TryAcquireOptions } from './session-lease.js';
export { LeaseRefresher, defaultRefreshInterval, refreshFailureCap } from './refresher.js';
export type { LeaseRefresherOptions, RefresherClock } from './refresher.js';
export { LeaseUnavailableError, RedisVersionError } from './errors.js';
export type { AcquireResult, Lease, RefreshResult, ReleaseResult } from './types.js';
export type { LeaseApi } from './lease-api.js';
