// The CLI's streams, injectable so commands run in-process in tests (mocked AWS clients)
// exactly as they do from a shell.
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { CliError, UsageError } from './errors.js';

export interface CliIo {
  stdout: Writable;
  stderr: Writable;
  stdin: Readable;
  /** Whether a person can answer a prompt (stdin and stderr are terminals). */
  interactive: boolean;
  env: NodeJS.ProcessEnv;
}

export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    interactive: Boolean(process.stdin.isTTY && process.stderr.isTTY),
    env: process.env,
  };
}

/**
 * Asks before a destructive step, e.g. `action` = "revoke API key 3fa2... of tenant acme".
 * `--yes` skips the question; without a terminal there is nobody to ask, so the command refuses
 * rather than guess (a script must say --yes).
 */
export async function confirm(io: CliIo, action: string, yes: boolean): Promise<void> {
  if (yes) return;
  if (!io.interactive) throw new UsageError(`refusing to ${action} without confirmation: stdin is not a terminal; pass --yes`);
  io.stderr.write(`${action[0]!.toUpperCase()}${action.slice(1)}? [y/N] `);
  const rl = createInterface({ input: io.stdin, terminal: false });
  const answer = await new Promise<string>((resolve) => {
    rl.once('line', resolve);
    // Closing stdin (Ctrl-D) is a "no", not a hang.
    rl.once('close', () => resolve(''));
  });
  rl.close();
  if (!/^y(es)?$/i.test(answer.trim())) throw new CliError('aborted: nothing was changed');
}
