// A held attempt's own writes (SPEC E1-E5): the agent's engine runs between requests, so what a
// single process keeps in memory for the service's engine lives on the attempt record here: the
// commit's claim (an abort during it answers commit_in_progress), the throttled "in progress"
// mark, and an outcome row a repeated commit or a status read answers from.
import type { SessionRef } from '../../session-ref.js';
import type { BegunAttempt, HeldAttemptNamed, HeldOutcomeRecord } from '../types.js';
import { ATTEMPT_ATTRS } from './attempts.js';
import { toSessionRecord, withDefaults, type StoredMeta } from './meta-row.js';
import { HELD_PREFIX, sessionPk } from './keys.js';
import { StoreOutcomeUnknownError, StoreRetryableError } from '../errors.js';
import { isConditionFailure, mayHaveApplied } from './retry.js';
import type { Table } from './table.js';

/** Outcome rows are kept this long: a lost answer is retried within it (like an Idempotency-Key, A3). */
const OUTCOME_RETENTION_S = 24 * 3600;

const OURS = '#attempt.#attemptId = :aid AND #attempt.#holder = :holder AND attribute_exists(#attempt.#held)';
const NOT_CLAIMED = 'attribute_not_exists(#attempt.#held.#committing)';
/**
 * The attempt the agent's id names, field by field: the id is the agent's to send, so a commit
 * never trusts it for the snapshot it checks (generation, watermark) or how it commits (mode).
 */
const NAMED = '#fence = :fence AND #attemptWatermark = :wm AND #attempt.#held.#mode = :mode AND #attempt.#held.#ttlMs = :ttl';
/** A record that never changed generation may have no generation attribute (withDefaults reads it as 0). */
const generationIs = (g: number) => (g === 0 ? '(attribute_not_exists(#generation) OR #generation = :gen)' : '#generation = :gen');

export function heldOutcomeKey(ref: SessionRef, attemptId: string): { pk: string; sk: string } {
  return { pk: sessionPk(ref), sk: `${HELD_PREFIX}${attemptId}` };
}

export class HeldAttemptWrites {
  constructor(private readonly table: Table) {}

  /** The row a held attempt's ending leaves behind (put by the caller, or inside the commit's transaction). */
  outcomeRow(ref: SessionRef, attemptId: string, outcome: HeldOutcomeRecord): Record<string, unknown> {
    return {
      ...heldOutcomeKey(ref, attemptId),
      kind: 'held-outcome',
      outcome: JSON.stringify(outcome),
      expiresAt: Math.floor(this.table.now() / 1000) + OUTCOME_RETENTION_S,
    };
  }

  async readOutcome(ref: SessionRef, attemptId: string): Promise<HeldOutcomeRecord | null> {
    const row = await this.table.getItem<{ outcome?: string; expiresAt?: number }>(heldOutcomeKey(ref, attemptId));
    if (!row?.outcome || (row.expiresAt ?? 0) * 1000 <= this.table.now()) return null;
    return JSON.parse(row.outcome) as HeldOutcomeRecord;
  }

  /** E3: claims the attempt for its commit (token-checked by the recorded holder); null when it is not ours to commit. */
  async claimCommit(ref: SessionRef, attemptId: string, holder: string, named: HeldAttemptNamed): Promise<BegunAttempt | null> {
    try {
      const out = await this.table.update(
        'claim held commit',
        ref,
        {
          update: 'SET #attempt.#held.#committing = :now',
          condition: `${OURS} AND ${NOT_CLAIMED} AND ${NAMED} AND ${generationIs(named.generation)}`,
        },
        {
          ':aid': attemptId,
          ':holder': holder,
          ':now': this.table.now(),
          ':fence': named.fence,
          ':wm': named.watermark,
          ':mode': named.mode,
          ':ttl': named.ttlMs,
          ':gen': named.generation,
        },
        'ALL_NEW',
      );
      const meta = withDefaults(out.Attributes as StoredMeta);
      if (!meta.attempt) return null;
      const { stale: _stale, ...attempt } = meta.attempt;
      return { attempt, session: toSessionRecord(meta), version: meta.version };
    } catch (err) {
      if (isConditionFailure(err)) return null;
      // The claim may have landed unanswered (a stalled store resumes): then a retry of this commit is
      // refused as commit_in_progress until a takeover, so the answer is "unknown", never "nothing applied".
      if (err instanceof StoreRetryableError && mayHaveApplied(err.cause))
        throw new StoreOutcomeUnknownError(`claim held commit on ${ref.sessionId}: DynamoDB did not confirm it`, err.cause);
      throw err;
    }
  }

  /**
   * E2/C5: the "in progress" mark and the recorded lease expiry, in one update, only when the last
   * mark is older than `cutoff` (at most one write per 10 s, whichever container sends it).
   */
  markProgress(
    ref: SessionRef,
    attemptId: string,
    holder: string,
    label: string,
    leaseExpiresAt: number,
    cutoff: number,
  ): Promise<boolean> {
    return this.table.updateIf(
      'mark held attempt',
      ref,
      {
        update: 'SET #lastActivity = :mark, #leaseExpiresAt = :exp, #attempt.#leaseExpiresAt = :exp, #attempt.#held.#markedAt = :now',
        condition: `${OURS} AND ${NOT_CLAIMED} AND #attempt.#held.#markedAt <= :cutoff`,
      },
      {
        ':aid': attemptId,
        ':holder': holder,
        ':mark': { label, at: this.table.isoNow() },
        ':exp': leaseExpiresAt,
        ':now': this.table.now(),
        ':cutoff': cutoff,
      },
    );
  }

  /**
   * Ends a held attempt that did not commit (E4 abort, or a commit that ended without writing):
   * clears it with its final mark and leaves its outcome row, in one transaction. An abort
   * (`claimed` false) is refused while a commit holds the claim. False when it was not ours to end.
   */
  async end(
    ref: SessionRef,
    attemptId: string,
    holder: string,
    label: string,
    row: Record<string, unknown>,
    claimed: boolean,
  ): Promise<boolean> {
    try {
      await this.table.transact('end held attempt', [
        this.table.metaUpdate(
          ref,
          { update: `SET #lastActivity = :mark REMOVE ${ATTEMPT_ATTRS}`, condition: claimed ? OURS : `${OURS} AND ${NOT_CLAIMED}` },
          { ':aid': attemptId, ':holder': holder, ':mark': { label, at: this.table.isoNow() } },
        ),
        this.table.put(row),
      ]);
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }
}
