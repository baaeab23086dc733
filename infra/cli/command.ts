// What a command is to the dispatcher (main.ts): its words, its help line and a run function
// that returns the exit code or throws CliError / UsageError.
import type { CliIo } from './io.js';

export interface Command {
  /** The words that select it, e.g. "keys revoke". */
  name: string;
  /** Synopsis after `npm run cli --`, shown in usage. */
  usage: string;
  summary: string;
  run(args: string[], io: CliIo): Promise<number>;
}
