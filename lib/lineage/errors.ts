// Typed store errors; callers map them to outcomes and HTTP statuses. Store-agnostic.
export class LineageError extends Error {
  override readonly name: string = 'LineageError';
  readonly retryable: boolean = false;
}

export class SessionNotFoundError extends LineageError {
  override readonly name = 'SessionNotFoundError';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} not found`);
  }
}

/** K1/K3: no such conversation for this tenant (never created, deleted, or another tenant's). */
export class ConversationNotFoundError extends LineageError {
  override readonly name = 'ConversationNotFoundError';
  constructor(readonly conversationId: string) {
    super(`conversation ${conversationId} not found`);
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
    super(`conversation ${conversationId} holds ${format} items, not ${requested}`);
  }
}

export class SessionExistsError extends LineageError {
  override readonly name = 'SessionExistsError';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} already exists`);
  }
}

/** Appending to or compacting a session that has ended; names the live tip of its chain when known (F1, C4). */
export class SessionEndedError extends LineageError {
  override readonly name = 'SessionEndedError';
  constructor(
    readonly sessionId: string,
    readonly liveSessionId: string | null,
  ) {
    super(`session ${sessionId} has ended${liveSessionId ? `; continue on ${liveSessionId}` : ''}`);
  }
}

/**
 * The session has ended and its chain has no live session: its tip was deleted (issue 22). Adoption
 * (C4) and review (C13) answers carry this instead of naming a session nobody can write to.
 */
export class ChainDeletedError extends LineageError {
  override readonly name = 'ChainDeletedError';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} has ended and its chain has no live session (its tip was deleted)`);
  }
}

/** A newer attempt began (or the attempt was swept): this one may not commit (SPEC L6). */
export class FenceStaleError extends LineageError {
  override readonly name = 'FenceStaleError';
  constructor(
    readonly sessionId: string,
    readonly fence: number,
  ) {
    super(`fence ${fence} is stale for session ${sessionId}`);
  }
}

/** Another attempt is in flight and its lease has not expired: this one does not begin. */
export class AttemptInFlightError extends LineageError {
  override readonly name = 'AttemptInFlightError';
  constructor(
    readonly sessionId: string,
    readonly holder: string,
  ) {
    super(`session ${sessionId} has a compaction in flight (${holder})`);
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
    super(`session ${sessionId} was already rotated${liveSessionId ? ` to ${liveSessionId}` : ''}`);
  }
}

export class ItemTooLargeError extends LineageError {
  override readonly name = 'ItemTooLargeError';
  constructor(
    readonly index: number,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`item ${index} is ${bytes} bytes stored; the limit is ${limit}`);
  }
}

/** A4: the session does not hold the number of items the client expected. */
export class CountMismatchError extends LineageError {
  override readonly name = 'CountMismatchError';
  constructor(
    readonly sessionId: string,
    readonly expected: number,
    readonly messageCount: number,
  ) {
    super(`session ${sessionId} holds ${messageCount} items, not the expected ${expected}`);
  }
}

/** A3: an Idempotency-Key already used with a different request. */
export class IdempotencyKeyReusedError extends LineageError {
  override readonly name = 'IdempotencyKeyReusedError';
  constructor(readonly key: string) {
    super('this Idempotency-Key was already used with a different request body');
  }
}

/** A5: the cursor points into a generation an in-place compaction has replaced. */
export class StaleCursorError extends LineageError {
  override readonly name = 'StaleCursorError';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} was compacted in place since this cursor was issued; page again from the start`);
  }
}

/** A chain longer than the store follows when resolving the live tip. */
export class LineageTooDeepError extends LineageError {
  override readonly name = 'LineageTooDeepError';
  constructor(
    readonly sessionId: string,
    readonly hops: number,
  ) {
    super(`the chain of session ${sessionId} is longer than ${hops} sessions; read GET /sessions/{id}/lineage from a later session`);
  }
}

/** Throttling / transaction conflicts / version races that outlived our bounded retries. */
export class StoreRetryableError extends LineageError {
  override readonly name = 'StoreRetryableError';
  override readonly retryable = true;
  constructor(
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

/**
 * A write DynamoDB may have applied without confirming it: every try of the transaction (one
 * ClientRequestToken) timed out or lost its connection after it was sent. Unlike
 * StoreRetryableError it does not mean "nothing was applied": read before repeating it.
 */
export class StoreOutcomeUnknownError extends LineageError {
  override readonly name = 'StoreOutcomeUnknownError';
  override readonly retryable = true;
  constructor(
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}
