// Majority voting across independent Redis masters (Redlock), deciding as soon as the
// outcome is certain so one slow node does not delay a decided round (SPEC L2, L4).

export function quorumSize(nodes: number): number {
  return Math.floor(nodes / 2) + 1;
}

/** What one node said about an acquire: we took it, someone else holds it (their token), or it failed. */
export type NodeVote = { kind: 'for' } | { kind: 'locked'; holder: string | null } | { kind: 'error'; error: Error };

export interface AcquireTally {
  decision: 'won' | 'locked' | 'unavailable';
  /** Votes received before the decision, by node index (later ones are not waited for). */
  votes: (NodeVote | undefined)[];
  /** Every node's vote once all have answered; for undoing late "for" votes of a lost round. */
  settled: Promise<NodeVote[]>;
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
  const votes: (NodeVote | undefined)[] = new Array<NodeVote | undefined>(n).fill(undefined);
  const all = voters.map((vote, i) =>
    vote()
      .catch((err: unknown): NodeVote => ({ kind: 'error', error: err instanceof Error ? err : new Error(String(err)) }))
      .then((v) => {
        votes[i] = v;
        return v;
      }),
  );
  const settled = Promise.all(all);
  return new Promise((resolve) => {
    let decided = false;
    const onVote = () => {
      if (decided) return;
      const cast = votes.filter((v): v is NodeVote => v !== undefined);
      const forCount = cast.filter((x) => x.kind === 'for').length;
      const against = cast.length - forCount;
      if (forCount >= needed) {
        decided = true;
        resolve({ decision: 'won', votes: [...votes], settled });
      } else if (against > n - needed) {
        decided = true;
        const locked = cast.some((x) => x.kind === 'locked');
        resolve({ decision: locked ? 'locked' : 'unavailable', votes: [...votes], settled });
      }
    };
    for (const p of all) void p.then(onVote);
  });
}
