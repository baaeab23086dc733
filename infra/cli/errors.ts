// Exit codes are part of the CLI's interface: scripts branch on them.
export const EXIT_OK = 0;
/** The command ran and failed (unknown session, wrong token, unreachable backend...). */
export const EXIT_FAILED = 1;
/** The command line was wrong; usage is printed. */
export const EXIT_USAGE = 2;
/** `audit forks` found at least one fork. */
export const EXIT_FORKS_FOUND = 3;

/** A failure worth a one-line message (exit 1), as opposed to a bug (also exit 1, but with a stack). */
export class CliError extends Error {
  override readonly name = 'CliError';
}

/** A wrong command line (exit 2); `usage` is the help of the command that was meant. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly usage?: string,
  ) {
    super(message);
  }
}
