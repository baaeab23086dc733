// Majority voting across independent Redis masters (Redlock), deciding as soon as the
// outcome is certain so one slow node does not delay a decided round (SPEC L2, L4).

export function quorumSize(nodes: number): number {
  return Math.floor(nodes / 2) + 1;
}

/** What one node said about an acquire: took it, someone else holds it, or failed. */
export type NodeVote = { kind: 'for' } | { kind: 'locked' } | { kind: 'error'; error: Error };

export interface AcquireTally {
  decision: 'won' | 'locked' | 'unavailable';
  /** Votes received before the decision (later ones are not waited for). */
  votes: NodeVote[];
}

/**
 * Runs one vote per node in parallel and resolves once a majority is for, or a majority
 * can no longer be reached. A lost round is "locked" when any node reported the key
 * held (held-by-other wins over node errors: the caller must not report "unavailable"
 * for a lease another holder demonstrably has), otherwise "unavailable".
 */
export function tallyAcquire(voters: ReadonlyArray<() => Promise<NodeVote>>): Promise<AcquireTally> {
  const n = voters.length;
  const needed = quorumSize(n);
  const votes: NodeVote[] = [];
  return new Promise((resolve) => {
    let decided = false;
    const onVote = (v: NodeVote) => {
      if (decided) return;
      votes.push(v);
      const forCount = votes.filter((x) => x.kind === 'for').length;
      const against = votes.length - forCount;
      if (forCount >= needed) {
        decided = true;
        resolve({ decision: 'won', votes: [...votes] });
      } else if (against > n - needed) {
        decided = true;
        const locked = votes.some((x) => x.kind === 'locked');
        resolve({ decision: locked ? 'locked' : 'unavailable', votes: [...votes] });
      }
    };
    for (const vote of voters) {
      vote().then(onVote, (err: unknown) => onVote({ kind: 'error', error: err instanceof Error ? err : new Error(String(err)) }));
    }
  });
}
