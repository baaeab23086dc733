// Majority tally for acquire: decided as soon as the outcome is certain (SPEC L2, L4).
import { describe, expect, it } from 'vitest';
import { quorumSize, tallyAcquire, type NodeVote } from '../../../lib/lease/quorum.js';

const never = () => new Promise<NodeVote>(() => undefined);
const vote = (v: NodeVote) => () => Promise.resolve(v);
const FOR: NodeVote = { kind: 'for' };
const LOCKED: NodeVote = { kind: 'locked', holder: 'h#1' };
const ERR: NodeVote = { kind: 'error', error: new Error('down') };

describe('quorum tally', () => {
  it.each([
    [1, 1],
    [2, 2],
    [3, 2],
    [4, 3],
    [5, 3],
  ])('L4: %i nodes need a majority of %i', (n, q) => {
    expect(quorumSize(n)).toBe(q);
  });

  it('L2: a majority for wins without waiting for a hung node', async () => {
    await expect(tallyAcquire([vote(FOR), never, vote(FOR)])).resolves.toMatchObject({ decision: 'won' });
  });

  it('L4: two errors out of three decide "unavailable" without waiting for the third', async () => {
    await expect(tallyAcquire([vote(ERR), vote(ERR), never])).resolves.toMatchObject({ decision: 'unavailable' });
  });

  it('L2: a lost round with any "locked" vote is held-by-other, even next to an error', async () => {
    await expect(tallyAcquire([vote(ERR), vote(LOCKED), never])).resolves.toMatchObject({ decision: 'locked' });
    await expect(tallyAcquire([vote(LOCKED), vote(FOR), vote(LOCKED)])).resolves.toMatchObject({ decision: 'locked' });
  });

  it('L4: a rejected vote counts as an error', async () => {
    const t = await tallyAcquire([() => Promise.reject(new Error('x')), vote(ERR), vote(FOR)]);
    expect(t.decision).toBe('unavailable');
    expect(t.votes.filter((v) => v?.kind === 'error')).toHaveLength(2);
  });

  it('L4: one for, one error, one locked on three nodes is not a win', async () => {
    await expect(tallyAcquire([vote(FOR), vote(ERR), vote(LOCKED)])).resolves.toMatchObject({ decision: 'locked' });
  });
});
