// Defect (low): with 2 of 3 Redis nodes unreachable, a compress request that races another
// one is answered 200 `skipped`/`locked` (naming a holder that has no lease) instead of
// 503 `lease_unavailable` + Retry-After (SPEC L2, L4, C2, F1).
//
// Seen live: two concurrent POST /compress with two Redis nodes SIGSTOPped, four times in a
// row: one 503 lease_unavailable, the other 200 skipped/locked. The only "locked" vote came
// from the single reachable node, holding the other request's minority SET (which that
// request was undoing: it could not get a quorum either). tallyAcquire lets one "locked" vote
// win over node errors, so the loser is told "someone else is compacting, do not retry" while
// nobody holds, or can hold, the lease. A held lease needs a majority; one node's key is not one.
// (Debatable: under a true partition the other holder might reach the nodes we cannot; but then
// the round still cannot tell, and 503 + Retry-After is the answer that makes a client come back.)
import { describe, expect, it } from 'vitest';
import { tallyAcquire, type NodeVote } from '../../lib/lease/quorum.js';

const down = (): Promise<NodeVote> => Promise.reject(new Error('Command timed out'));
const lockedBy = (holder: string) => (): Promise<NodeVote> => Promise.resolve({ kind: 'locked', holder });

describe('adversarial: a minority key is not a held lease (L2, L4, C2)', () => {
  it('L4/C2: one node says "held", two nodes are down: the round is unavailable, not locked', async () => {
    const tally = await tallyAcquire([lockedBy('http:req-1#abc'), down, down]);
    expect(tally.decision).toBe('unavailable');
  });

  it('L4/C2: 5 nodes, one "held", three down: unavailable', async () => {
    const tally = await tallyAcquire([lockedBy('x'), () => Promise.resolve({ kind: 'for' }), down, down, down]);
    expect(tally.decision).toBe('unavailable');
  });
});
