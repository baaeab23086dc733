// Typed lease errors. Only "no quorum because nodes are unreachable" is an error;
// a lease held by someone else is a normal result (SPEC L2).

/** No majority of Redis nodes answered; the caller must skip the attempt (SPEC L4, C2). */
export class LeaseUnavailableError extends Error {
  override readonly name = 'LeaseUnavailableError';
  constructor(
    readonly sessionKey: string,
    /** One message per node that failed to vote (unreachable, script error, bad reply). */
    readonly nodeErrors: readonly string[],
  ) {
    super(`lease backend unavailable for ${sessionKey}: no quorum (${nodeErrors.join('; ') || 'no node answered'})`);
  }
}
