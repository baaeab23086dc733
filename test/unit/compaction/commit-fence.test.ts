import { describe, expect, it } from 'vitest';
import { CommitFence } from '../../../lib/compaction/commit-fence.js';

describe('CommitFence', () => {
  it('C9: cancel before the commit started cancels, aborts the signal and blocks the commit', async () => {
    const fence = new CommitFence();
    expect(await fence.cancel()).toBe(true);
    expect(fence.signal.aborted).toBe(true);
    expect(fence.enterCommit()).toBe(false);
    expect(fence.tryCancel()).toBe('cancelled');
    expect(await fence.cancel()).toBe(true);
  });

  it('C9: cancel during a commit waits for it to finish and reports false', async () => {
    const fence = new CommitFence();
    expect(fence.enterCommit()).toBe(true);
    expect(fence.tryCancel()).toBe('commit_in_progress');
    let settled = false;
    const cancelling = fence.cancel().then((r) => {
      settled = true;
      return r;
    });
    // Several macrotask turns: the cancel must still be waiting for the commit.
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    fence.finishCommit();
    expect(await cancelling).toBe(false);
    expect(fence.signal.aborted).toBe(false);
    expect(fence.tryCancel()).toBe('committed');
    expect(await fence.cancel()).toBe(false);
  });

  it('C9: tryCancel is non-blocking and cancels an open fence', () => {
    const fence = new CommitFence();
    expect(fence.state).toBe('open');
    expect(fence.tryCancel()).toBe('cancelled');
    expect(fence.cancelled).toBe(true);
  });

  it('C9: a second enterCommit is a programming error', () => {
    const fence = new CommitFence();
    fence.enterCommit();
    expect(() => fence.enterCommit()).toThrow(/enterCommit/);
  });
});
