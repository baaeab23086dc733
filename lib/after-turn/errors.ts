// Why an after-turn record failed; the batch reports each failed record to SQS.
import { ServiceError } from '../errors.js';

/** Worth another delivery: the lease backend was down, the attempt lost its lease or was cancelled. */
export class AfterTurnRetryableError extends ServiceError {
  override readonly name = 'AfterTurnRetryableError';
  constructor(
    readonly reason: string,
    message = `compaction did not run: ${reason}`,
  ) {
    super(message, { status: 503, code: 'unavailable', retryable: true });
  }
}

/**
 * A body no retry can fix. Still reported as a batch failure: after the queue's
 * maxReceiveCount it lands in the dead-letter queue, where it can be inspected.
 */
export class InvalidAfterTurnEventError extends ServiceError {
  override readonly name = 'InvalidAfterTurnEventError';
  constructor(message: string, cause?: unknown) {
    super(message, { status: 400, code: 'invalid_request', cause });
  }
}
