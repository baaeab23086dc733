// The one logger type of lib/: what domain code may call. Powertools Logger satisfies it
// (functions/ hand theirs in), so lib/ never imports Powertools just to log.

export type LogExtra = Record<string, unknown>;

/** A message, optionally with one object of structured fields (written as a rest tuple, not `extra?`,
 * because Powertools' signature does not accept an explicit `undefined` there). */
export type LogArgs = [message: string] | [message: string, extra: LogExtra];

export interface Logger {
  debug(...args: LogArgs): void;
  info(...args: LogArgs): void;
  warn(...args: LogArgs): void;
  error(...args: LogArgs): void;
}

/** For callers that were given no logger (tests, CLI): drops everything. */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
