// Typed store errors; callers map them to outcomes and HTTP statuses.
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

export class SessionExistsError extends LineageError {
  override readonly name = 'SessionExistsError';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} already exists`);
  }
}

/** Appending to or compacting a session that has ended; names the live child when known. */
export class SessionEndedError extends LineageError {
  override readonly name = 'SessionEndedError';
  constructor(
    readonly sessionId: string,
    readonly liveSessionId: string | null,
  ) {
    super(`session ${sessionId} has ended${liveSessionId ? `; continue on ${liveSessionId}` : ''}`);
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

export class MessageTooLargeError extends LineageError {
  override readonly name = 'MessageTooLargeError';
  constructor(
    readonly index: number,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`message ${index} is ${bytes} bytes; the limit is ${limit}`);
  }
}

/** Throttling / transaction conflicts that outlived our bounded retries. */
export class StoreRetryableError extends LineageError {
  override readonly name = 'StoreRetryableError';
  override readonly retryable = true;
  constructor(message: string, override readonly cause?: unknown) {
    super(message);
  }
}
