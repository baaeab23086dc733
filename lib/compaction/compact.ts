// compactSession plus what follows it off the answer's path: the work a commit deferred
// (archiving the replaced generation, P3) starts in the background. It is never awaited and
// never thrown: when a frozen or recycled Lambda container drops it, the sweep does it (S1).
import { errorFields } from '../errors.js';
import { silentLogger } from '../logger.js';
import { compactSession } from './compact-session.js';
import type { CompactionDeps, CompactionOutcome, CompactRequest } from './types.js';

export async function compact(deps: CompactionDeps, req: CompactRequest): Promise<CompactionOutcome> {
  const outcome = await compactSession(deps, req);
  if (outcome.outcome === 'compressed' && outcome.deferred) {
    const task = outcome.deferred;
    deps.store.runTask(task).catch((err: unknown) => {
      (deps.logger ?? silentLogger).warn('deferred archive failed; the sweep will run it', {
        sessionId: task.ref.sessionId,
        error: errorFields(err),
      });
    });
  }
  return outcome;
}
