// Commit fence (SPEC C9): lets a caller (an invocation timeout, a superseding turn) cancel an
// attempt up to the moment its commit starts. After that, cancelling waits for the commit to
// finish and reports that nothing was cancelled, so a timeout can never overlap a live write.

export type CommitFenceState = 'open' | 'cancelled' | 'committing' | 'committed';
export type TryCancelResult = 'cancelled' | 'commit_in_progress' | 'committed';

export class CommitFence {
  #state: CommitFenceState = 'open';
  readonly #abort = new AbortController();
  #commitDone: Promise<void> | undefined;
  #resolveCommitDone: (() => void) | undefined;

  get state(): CommitFenceState {
    return this.#state;
  }

  /** Aborts on cancel, so a running engine can stop early. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get cancelled(): boolean {
    return this.#state === 'cancelled';
  }

  /** Non-blocking: cancels if the commit has not started, else says where it is. */
  tryCancel(): TryCancelResult {
    switch (this.#state) {
      case 'open':
        this.#markCancelled();
        return 'cancelled';
      case 'cancelled':
        return 'cancelled';
      case 'committing':
        return 'commit_in_progress';
      case 'committed':
        return 'committed';
    }
  }

  /** true: cancelled before the commit began. false: the commit began; resolves once it finished. */
  async cancel(): Promise<boolean> {
    const r = this.tryCancel();
    if (r === 'cancelled') return true;
    if (r === 'commit_in_progress') await this.#commitDone;
    return false;
  }

  /** Called by the attempt right before committing; false means it was cancelled and must not commit. */
  enterCommit(): boolean {
    if (this.#state === 'cancelled') return false;
    if (this.#state !== 'open') throw new Error(`commit fence: enterCommit in state ${this.#state}`);
    this.#state = 'committing';
    this.#commitDone = new Promise<void>((resolve) => {
      this.#resolveCommitDone = resolve;
    });
    return true;
  }

  /** Ends the commit phase (whether the commit succeeded or threw); releases waiting cancels. */
  finishCommit(): void {
    if (this.#state !== 'committing') return;
    this.#state = 'committed';
    this.#resolveCommitDone?.();
  }

  #markCancelled(): void {
    this.#state = 'cancelled';
    this.#abort.abort(new Error('compaction cancelled before commit'));
  }
}
