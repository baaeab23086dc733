// The one entry point of a compaction (issue 25): compactSession (SPEC C1-C13) plus everything
// that follows one attempt, so an attempt is one function and the runtime only wires:
// - the EMF metrics of every attempt, whatever its outcome;
// - after a commit, the work it deferred (archiving the replaced generation, P3), started in the
//   background: never awaited and never thrown; when a frozen or recycled Lambda container drops
//   it, the sweep does it (S1);
// - after a commit, the SessionCompacted event, once the lease is released (a publisher never
//   throws into the answer).
import { errorFields } from '../errors.js';
import { silentLogger } from '../logger.js';
import { compactSession } from './compact-session.js';
import { announceCommit, countAttempt, type CompactionFollowUps } from './follow-ups.js';
import type { CompactionDeps, CompactionOutcome, CompactRequest } from './types.js';

export type { CompactionFollowUps };

export async function compact(deps: CompactionDeps & CompactionFollowUps, req: CompactRequest): Promise<CompactionOutcome> {
  const outcome = await compactSession(deps, req);
  countAttempt(deps, outcome, outcome.outcome === 'compressed' ? outcome.commitMs : undefined);
  if (outcome.outcome !== 'compressed') return outcome;
  if (outcome.deferred) {
    const task = outcome.deferred;
    deps.store.runTask(task).catch((err: unknown) => {
      (deps.logger ?? silentLogger).warn('deferred archive failed; the sweep will run it', {
        sessionId: task.ref.sessionId,
        error: errorFields(err),
      });
    });
  }
  await announceCommit(deps, req.ref.tenantId, outcome, req.correlationId);
  return outcome;
}
