// Majority voting across independent Redis masters (Redlock), deciding as soon as the
// outcome is certain so one slow node does not delay a decided round (SPEC L2, L4).
import { asError } from '../errors.js';

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
 * Runs one vote per node in parallel and resolves as soon as the outcome is certain:
 * - "won": a majority is for us;
 * - "unavailable": so many nodes failed that no majority can answer at all;
 * - "locked": we cannot win and a majority did answer (held by another, or a split vote).
 * A lost round where fewer than a majority answered waits for the rest: one node's key next
 * to unreachable nodes is not a held lease (it may be a minority SET being undone), and
 * "locked" tells a caller not to come back, while "unavailable" asks it to retry.
 */
export function tallyAcquire(voters: ReadonlyArray<() => Promise<NodeVote>>): Promise<AcquireTally> {
  const n = voters.length;
  const needed = quorumSize(n);
  const votes: (NodeVote | undefined)[] = new Array<NodeVote | undefined>(n).fill(undefined);
  const all = voters.map((vote, i) =>
    vote()
      .catch((err: unknown): NodeVote => ({ kind: 'error', error: asError(err) }))
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
      const errors = cast.filter((x) => x.kind === 'error').length;
      const against = cast.length - forCount;
      const decision =
        forCount >= needed
          ? 'won'
          : errors > n - needed
            ? 'unavailable'
            : against > n - needed && cast.length - errors >= needed
              ? 'locked'
              : undefined;
      if (decision) {
        decided = true;
        resolve({ decision, votes: [...votes], settled });
      }
    };
    for (const p of all) void p.then(onVote);
  });
}
