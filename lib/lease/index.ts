// Public surface of the session lease (SPEC L1-L7).
export { SessionLease, DEFAULT_LEASE_KEY_PREFIX, newLeaseToken } from './session-lease.js';
export type { SessionLeaseOptions, TryAcquireOptions } from './session-lease.js';
export { LeaseRefresher, defaultRefreshInterval, refreshFailureCap } from './refresher.js';
export type { LeaseRefresherOptions, RefresherClock } from './refresher.js';
export { LeaseUnavailableError } from './errors.js';
export type { AcquireResult, FenceIssuer, Lease, RefreshResult, ReleaseResult } from './types.js';
export type { LeaseApi } from './lease-api.js';
