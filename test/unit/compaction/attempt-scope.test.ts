// I3: AttemptScope owns its state; its transitions go one way and close() gives back, in order,
// what the attempt holds. The flags are private: the order cannot be broken from outside.
import { describe, expect, it } from 'vitest';
import { AttemptScope } from '../../../lib/compaction/attempt-scope.js';
import type { ActivityHeartbeat } from '../../../lib/compaction/heartbeat.js';
import type { AttemptRefresher } from '../../../lib/compaction/types.js';
import type { LeaseApi } from '../../../lib/lease/index.js';
import type { AttemptRecord, LineageStore } from '../../../lib/lineage/types.js';
import { silentLogger } from '../../../lib/logger.js';

const ref = { tenantId: 't', sessionId: 's' };
const attempt = { attemptId: 'a1', fence: 1 } as unknown as AttemptRecord;

function scopeWithLog() {
  const log: string[] = [];
  const store = {
    abandonAttempt: (_r: unknown, a: AttemptRecord, o: { activityLabel?: string; commitStarted?: boolean }) => {
      log.push(`abandon ${a.attemptId} ${o.activityLabel} commitStarted=${o.commitStarted}`);
      return Promise.resolve();
    },
  } as unknown as LineageStore;
  const lease = { release: () => (log.push('release'), Promise.resolve({ released: true })) } as unknown as LeaseApi;
  const refresher: AttemptRefresher = {
    start: () => log.push('refresher start'),
    stop: () => (log.push('refresher stop'), Promise.resolve()),
    signal: new AbortController().signal,
  };
  const heartbeat = {
    start: () => log.push('heartbeat start'),
    stop: () => (log.push('heartbeat stop'), Promise.resolve()),
  } as unknown as ActivityHeartbeat;
  const scope = new AttemptScope({ sessionKey: 'k', token: 'x', expiresAt: 0 } as never, { lease, store, log: silentLogger }, ref);
  return { scope, log, refresher, heartbeat };
}

describe('AttemptScope (I3)', () => {
  it('I3: a commit that started and failed is cleared as such, after the heartbeat and the refresher stop, before the release', async () => {
    const { scope, log, refresher, heartbeat } = scopeWithLog();
    scope.began(attempt);
    scope.keepAlive(refresher, heartbeat);
    await scope.enterCommit();
    await scope.close(true);
    expect(log).toEqual([
      'refresher start',
      'heartbeat start',
      'heartbeat stop',
      'heartbeat stop',
      'refresher stop',
      'abandon a1 compaction failed commitStarted=true',
      'release',
    ]);
  });

  it('I3: a committed attempt is left to the commit; only the lease is given back', async () => {
    const { scope, log, refresher, heartbeat } = scopeWithLog();
    scope.began(attempt);
    scope.keepAlive(refresher, heartbeat);
    await scope.enterCommit();
    scope.markCommitted();
    await scope.close(false);
    expect(log.filter((l) => l.startsWith('abandon'))).toEqual([]);
    expect(log.at(-1)).toBe('release');
  });

  it('transitions out of order are refused', async () => {
    const { scope, refresher, heartbeat } = scopeWithLog();
    expect(() => scope.keepAlive(refresher, heartbeat)).toThrow(/before began/);
    expect(() => scope.leaseSignal).toThrow(/before keepAlive/);
    scope.began(attempt);
    expect(() => scope.markCommitted()).toThrow(/before enterCommit/);
    await scope.close(false);
  });
});
