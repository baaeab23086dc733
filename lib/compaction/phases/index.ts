// The phases of one compaction attempt. Two drivers play them: compactSession (the service's
// engine, in one call) and HeldAttempts (the agent's engine, across HTTP requests). A rule lives
// in one phase, so it holds for both.
export { acquireLease, beginUnderLease, chainDeleted, isEnding, reviewEnding } from './open.js';
export type { Ending, Opened, PhaseDeps } from './open.js';
export { checkReplacement } from './replacement.js';
export { commitReplacement, inPlaceGeneration } from './commit.js';
export type { Committed } from './commit.js';
