// Typed store errors, store-agnostic. Each says how it is answered (ServiceError: status, code,
// retryable, details); the API and the after-turn consumer read those fields.
import { ServiceError, type ServiceErrorInit } from '../errors.js';

/** A store failure; without a more specific class it is internal (an opaque 500). */
export class LineageError extends ServiceError {
  override readonly name: string = 'LineageError';
  constructor(message: string, init: ServiceErrorInit = { status: 500, code: 'internal' }) {
    super(message, init);
  }
}

/** "Busy, nothing applied": retry shortly (503 with Retry-After). */
const BUSY = { status: 503, code: 'unavailable', retryable: true, publicMessage: 'the session is busy; retry shortly' } as const;

function tooLargeMessage(index: number, bytes: number, limit: number): string {
  const what = index >= 0 ? `messages[${index}] is ${bytes} bytes stored` : `the append is ${bytes} bytes stored`;
  return `${what}; the limit is ${limit}`;
}

export class SessionNotFoundError extends LineageError {
  override readonly name = 'SessionNotFoundError';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} not found`, { status: 404, code: 'not_found' });
  }
}

/** K1/K3: no such conversation for this tenant (never created, deleted, or another tenant's). */
export class ConversationNotFoundError extends LineageError {
  override readonly name = 'ConversationNotFoundError';
  constructor(readonly conversationId: string) {
    super(`conversation ${conversationId} not found`, { status: 404, code: 'not_found' });
  }
}

/**
 * K1: a PUT under an id that is a session of another conversation (a session id from before
 * conversations, say): creating one would start an empty conversation beside that chain.
 */
export class SessionIdNotConversationError extends LineageError {
  override readonly name = 'SessionIdNotConversationError';
  constructor(
    readonly id: string,
    readonly conversationId: string,
  ) {
    super(`${id} is a session of conversation ${conversationId}, not a conversation: continue with ${conversationId}`, {
      status: 409,
      code: 'conflict',
      details: { conversationId },
    });
  }
}

/** K1: PUT with an explicit format other than the existing conversation's. */
export class FormatMismatchError extends LineageError {
  override readonly name = 'FormatMismatchError';
  constructor(
    readonly conversationId: string,
    readonly format: string,
    readonly requested: string,
  ) {
    // Says how to recover (issue 34): the format is fixed for the conversation's life.
    super(
      `conversation ${conversationId} holds ${format} items, not ${requested}: a conversation keeps the format it was created with; ` +
        `use another conversation id for ${requested} items, or DELETE /conversations/${conversationId} first to create it again`,
      { status: 409, code: 'format_mismatch' },
    );
  }
}

export class SessionExistsError extends LineageError {
  override readonly name = 'SessionExistsError';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} already exists`, { status: 409, code: 'conflict' });
  }
}

/** Appending to or compacting a session that has ended; names the live tip of its chain when known (F1, C4). */
export class SessionEndedError extends LineageError {
  override readonly name = 'SessionEndedError';
  constructor(
    readonly sessionId: string,
    readonly liveSessionId: string | null,
  ) {
    super(`session ${sessionId} has ended${liveSessionId ? `; continue on ${liveSessionId}` : ''}`, {
      status: 409,
      code: 'session_ended',
      details: { liveSessionId },
    });
  }
}

/**
 * The session has ended and its chain has no live session: its tip was deleted (issue 22). Adoption
 * (C4) and review (C13) answers carry this instead of naming a session nobody can write to.
 */
export class ChainDeletedError extends LineageError {
  override readonly name = 'ChainDeletedError';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} has ended and its chain has no live session (its tip was deleted)`, {
      status: 409,
      code: 'chain_deleted',
      details: { liveSessionId: null },
    });
  }
}

/** A newer attempt began (or the attempt was swept): this one may not commit (SPEC L6). */
export class FenceStaleError extends LineageError {
  override readonly name = 'FenceStaleError';
  constructor(
    readonly sessionId: string,
    readonly fence: number,
  ) {
    super(`fence ${fence} is stale for session ${sessionId}`, BUSY);
  }
}

/** Another attempt is in flight and its lease has not expired: this one does not begin. */
export class AttemptInFlightError extends LineageError {
  override readonly name = 'AttemptInFlightError';
  constructor(
    readonly sessionId: string,
    readonly holder: string,
  ) {
    super(`session ${sessionId} has a compaction in flight (${holder})`, BUSY);
  }
}

/**
 * E6: the session's compaction policy is `agent`: the service's engine does not compact it unless
 * forced. The attempt answers it as `disabled` (reason agent_engine); compress words it as a 409.
 */
export class AgentEnginePolicyError extends LineageError {
  override readonly name = 'AgentEnginePolicyError';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} is compacted by the agent's own engine (compaction policy agent)`, { status: 409, code: 'agent_engine' });
  }
}

/** An item the attempt snapshotted was popped (A6): its commit would bring it back. */
export class StaleSnapshotError extends LineageError {
  override readonly name = 'StaleSnapshotError';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} changed under the compaction: an item it read was removed`);
  }
}

/** Another attempt already rotated the parent (it has a child). */
export class RotationLostError extends LineageError {
  override readonly name = 'RotationLostError';
  constructor(
    readonly sessionId: string,
    readonly liveSessionId: string | null,
  ) {
    super(`session ${sessionId} was already rotated${liveSessionId ? ` to ${liveSessionId}` : ''}`, {
      status: 409,
      code: 'session_ended',
      details: { liveSessionId },
    });
  }
}

/**
 * X1: the rows a replace_suffix removes must fit one transaction beside its write (about 90);
 * an expected suffix beyond that is refused whole (not an item's size: the append-size message
 * named a few hundred bytes against a 6 MB limit).
 */
export class SuffixTooLongError extends LineageError {
  override readonly name = 'SuffixTooLongError';
  constructor(
    readonly items: number,
    readonly entries: number,
    readonly limit: number,
  ) {
    const message = `replacing the expected suffix (${items} items) needs ${entries} writes in one transaction, at most ${limit}: it spans too many stored rows; nothing was changed`;
    super(message, { status: 413, code: 'payload_too_large', publicMessage: message });
  }
}

export class ItemTooLargeError extends LineageError {
  override readonly name = 'ItemTooLargeError';
  constructor(
    readonly index: number,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`item ${index} is ${bytes} bytes stored; the limit is ${limit}`, {
      status: 413,
      code: 'payload_too_large',
      publicMessage: tooLargeMessage(index, bytes, limit),
    });
  }
}

/** A4: the session does not hold the number of items the client expected. */
/** X1: the live session's last items are not the transaction's expected suffix; nothing changed. */
export class SuffixMismatchError extends LineageError {
  override readonly name = 'SuffixMismatchError';
  constructor(
    readonly sessionId: string,
    readonly messageCount: number,
  ) {
    super(`session ${sessionId}'s last items are not the expected suffix (it holds ${messageCount} items); nothing changed`, {
      status: 409,
      code: 'suffix_mismatch',
      details: { messageCount },
    });
  }
}

export class CountMismatchError extends LineageError {
  override readonly name = 'CountMismatchError';
  constructor(
    readonly sessionId: string,
    readonly expected: number,
    readonly messageCount: number,
  ) {
    super(`session ${sessionId} holds ${messageCount} items, not the expected ${expected}`, {
      status: 409,
      code: 'count_mismatch',
      details: { messageCount },
    });
  }
}

/** A3: an Idempotency-Key already used with a different request. */
export class IdempotencyKeyReusedError extends LineageError {
  override readonly name = 'IdempotencyKeyReusedError';
  constructor(readonly key: string) {
    super('this Idempotency-Key was already used with a different request body', { status: 422, code: 'idempotency_key_reused' });
  }
}

/** A5: the cursor points into a generation an in-place compaction has replaced. */
export class CursorStaleError extends LineageError {
  override readonly name = 'CursorStaleError';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} was compacted in place since this cursor was issued; page again from the start`, {
      status: 409,
      code: 'cursor_stale',
    });
  }
}

/** A chain longer than the store follows when resolving the live tip. */
export class LineageTooDeepError extends LineageError {
  override readonly name = 'LineageTooDeepError';
  constructor(
    readonly sessionId: string,
    readonly hops: number,
  ) {
    super(`the chain of session ${sessionId} is longer than ${hops} sessions; read GET /sessions/{id}/lineage from a later session`, {
      status: 409,
      code: 'lineage_too_deep',
    });
  }
}

/**
 * What a store call that failed after the client's retries says (issue 35 item 6): the store was
 * slow or throttled (a timeout, a dropped connection, a 5xx, throttling), not that the session is busy.
 */
export const STORE_SLOW_MESSAGE =
  'the store (DynamoDB) was slow or throttled and did not answer after retries; nothing was applied; retry shortly';

/**
 * Throttling / transaction conflicts / version races that outlived our bounded retries. `slow`:
 * the store itself failed to answer (STORE_SLOW_MESSAGE); otherwise the session kept changing (busy).
 */
export class StoreRetryableError extends LineageError {
  override readonly name = 'StoreRetryableError';
  constructor(message: string, cause?: unknown, opts: { slow?: boolean } = {}) {
    super(message, { ...BUSY, ...(opts.slow ? { publicMessage: STORE_SLOW_MESSAGE } : {}), cause });
  }
}

/**
 * A write DynamoDB may have applied without confirming it: every try of the transaction (one
 * ClientRequestToken) timed out or lost its connection after it was sent. Unlike
 * StoreRetryableError it does not mean "nothing was applied": read before repeating it.
 */
export class StoreOutcomeUnknownError extends LineageError {
  override readonly name = 'StoreOutcomeUnknownError';
  constructor(message: string, cause?: unknown) {
    super(message, {
      status: 503,
      code: 'outcome_unknown',
      retryable: true,
      // Not the "nothing applied" 503 (busy): the client must not repeat a pop or an in-place compaction on it.
      publicMessage: 'the store did not confirm the write; it may have been applied: read the session before repeating it',
      cause,
    });
  }
}

/** P6: a partial commit's summary takes the part's sequence numbers, so it holds at most as many items as the part. */
export class ReplacementTooLongError extends LineageError {
  override readonly name = 'ReplacementTooLongError';
  constructor(
    readonly sessionId: string,
    readonly items: number,
    readonly room: number,
  ) {
    super(`session ${sessionId}: a summary of ${items} items does not fit the ${room} places of the part it replaces`);
  }
}
