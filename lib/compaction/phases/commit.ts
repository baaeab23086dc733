// Phase 3, shared by both drivers: the fenced commit (C10 rotation, C11 in place, I4 tail carried,
// L6) and what the store's refusals mean as outcomes (C4 adopted, L6 lease_lost, A6 stale).
import { estimateItemTokens } from '../../items/tokens.js';
import type { FormatAdapter, Item } from '../../items/types.js';
import {
  FenceStaleError,
  ReplacementTooLongError,
  RotationLostError,
  SessionEndedError,
  StaleSnapshotError,
} from '../../lineage/errors.js';
import type { BegunAttempt, LineageStore, StoreTask, TurnCredential } from '../../lineage/types.js';
import type { SessionRef } from '../../session-ref.js';
import type { AttemptScope } from '../attempt-scope.js';
import { ACTIVITY_LABELS, type CompactionMode } from '../types.js';
import { chainDeleted, type Ending } from './open.js';

export interface Committed {
  mode: CompactionMode;
  sessionId: string;
  previousSessionId: string;
  items: Item[];
  deferred?: StoreTask;
  generation?: number;
  conversationId?: string;
  /** P6: only the oldest part was replaced; the session's token estimate after it. */
  partial?: { replaced: number; remainingTokens: number };
}

/** The generation an in-place commit of `begun` makes active (numbered by fence, see attempts.ts). */
export function inPlaceGeneration(begun: BegunAttempt): number {
  return begun.attempt.fence > begun.session.generation ? begun.attempt.fence : begun.session.generation + 1;
}

export async function commitReplacement(
  store: LineageStore,
  scope: AttemptScope,
  ref: SessionRef,
  begun: BegunAttempt,
  mode: CompactionMode,
  compacted: Item[],
  adapter: FormatAdapter,
  /** A row written in the commit's own transaction (a held attempt's outcome, so a repeat replays it). */
  record?: Record<string, unknown>,
  /** P6: the snapshot was the oldest part up to `through`: replace exactly it, in place, whatever `mode` asked. */
  partial?: { through: number },
  /** T3: a held commit sent with a Turn-Token lands only while that turn is current. */
  turn?: TurnCredential,
): Promise<Committed | Ending> {
  const input = {
    compacted,
    tokenEstimates: compacted.map((it) => estimateItemTokens(it, adapter)),
    activityLabel: ACTIVITY_LABELS.completed,
    ...(record ? { record } : {}),
    ...(turn ? { turn } : {}),
  };
  await scope.enterCommit();
  try {
    // P6: a partial commit is in place even for a rotation: rotating now would copy every kept row
    // into the child. The attempt that finds the session within the bound rotates it (docs/compaction.md).
    if (partial) {
      const r = await store.commitPartial(ref, begun, { ...input, through: partial.through });
      scope.markCommitted();
      return {
        mode: 'in_place',
        sessionId: ref.sessionId,
        previousSessionId: ref.sessionId,
        items: r.items,
        generation: r.session.generation,
        partial: { replaced: r.replaced, remainingTokens: r.session.tokenEstimate },
        ...(r.session.conversationId !== undefined ? { conversationId: r.session.conversationId } : {}),
      };
    }
    if (mode === 'rotate') {
      const r = await store.commitRotation(ref, begun, input);
      scope.markCommitted();
      return {
        mode: 'rotate',
        sessionId: r.child.sessionId,
        previousSessionId: ref.sessionId,
        items: r.items,
        ...(r.child.conversationId !== undefined ? { conversationId: r.child.conversationId } : {}),
      };
    }
    const r = await store.commitInPlace(ref, begun, input);
    scope.markCommitted();
    return {
      mode: 'in_place',
      sessionId: ref.sessionId,
      previousSessionId: ref.sessionId,
      items: r.items,
      deferred: r.archive,
      generation: r.session.generation,
      ...(r.session.conversationId !== undefined ? { conversationId: r.session.conversationId } : {}),
    };
  } catch (err) {
    // L6 / C4: the store refused a stale or already-rotated commit; report the live session.
    if (err instanceof RotationLostError || err instanceof SessionEndedError)
      return { ended: 'skipped', reason: 'adopted', sessionId: err.liveSessionId ?? chainDeleted(ref.sessionId) };
    if (err instanceof FenceStaleError) return { ended: 'skipped', reason: 'lease_lost', sessionId: ref.sessionId };
    // A6: an item of the snapshot was popped meanwhile; committing would bring it back.
    if (err instanceof StaleSnapshotError) return { ended: 'skipped', reason: 'stale', sessionId: ref.sessionId };
    // P6: a partial summary reuses the part's sequence numbers; one longer than the part is not smaller (C7).
    if (err instanceof ReplacementTooLongError) return { ended: 'noop', reason: 'grown' };
    throw err;
  }
}
