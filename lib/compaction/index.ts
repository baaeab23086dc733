// Public surface of the compaction attempt (SPEC C1-C13).
export { compactSession, DEFAULT_COMMIT_SAFETY_MARGIN_MS, DEFAULT_LEASE_TTL_MS } from './compact-session.js';
export { compact } from './compact.js';
export { CommitFence } from './commit-fence.js';
export type { CommitFenceState, TryCancelResult } from './commit-fence.js';
export { ActivityHeartbeat, DEFAULT_HEARTBEAT_INTERVAL_MS, heartbeatIntervalMs } from './heartbeat.js';
export { restoreHumanAnchor } from './human-anchor.js';
export { optionsFor } from './engine-options.js';
export { noopReason } from './result-check.js';
export * from './types.js';
