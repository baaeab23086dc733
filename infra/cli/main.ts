// The operator CLI's dispatcher: picks the command by its words, maps outcomes to exit codes
// (errors.ts) and prints usage on a wrong command line. `run` never exits the process, so tests
// can call it in-process (with mocked AWS clients) as well as through `npm run cli`.
import { HelpRequested } from './args.js';
import type { Command } from './command.js';
import { auditForks } from './commands/audit.js';
import { conversationsDelete, conversationsList, conversationsShow } from './commands/conversations.js';
import { dlqRedrive } from './commands/dlq.js';
import { conversationsExport, tenantsSetRetention } from './commands/history.js';
import { keysCreate, keysList, keysRevoke } from './commands/keys.js';
import { leaseRelease, leaseShow } from './commands/lease.js';
import { lineage, sessionsShow } from './commands/sessions.js';
import { CliError, EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError } from './errors.js';
import { processIo, type CliIo } from './io.js';

export const COMMANDS: readonly Command[] = [
  conversationsList,
  conversationsShow,
  conversationsDelete,
  conversationsExport,
  tenantsSetRetention,
  sessionsShow,
  lineage,
  auditForks,
  keysCreate,
  keysList,
  keysRevoke,
  leaseShow,
  leaseRelease,
  dlqRedrive,
];

export function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'usage: npm run cli -- <command> [options]   (npm run cli -- <command> --help for its options)',
    '',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'options: --json  one JSON document on stdout;  --yes  skip the confirmation of a destructive command',
    'target:  the local stack `npm start` runs (its file: LOCAL_STACK_FILE, default infra/local/.local-stack.json);',
    '         --stage <s> [--region <r>] a deployed stage (stack session-lineage-<s>; Redis URLs from SSM); --table <name>',
    'environment (over the stack file or stage): DYNAMODB_ENDPOINT, TABLE_NAME, REDIS_URLS, AWS_REGION',
    'exit codes: 0 ok, 1 failed, 2 bad command line, 3 audit forks found a fork',
  ].join('\n');
}

function find(argv: readonly string[]): Command | undefined {
  return COMMANDS.find((c) => c.name.split(' ').every((word, i) => argv[i] === word));
}

export async function run(argv: string[], io: CliIo = processIo()): Promise<number> {
  const first = argv[0];
  if (first === undefined || first === 'help' || first === '--help' || first === '-h') {
    (first === undefined ? io.stderr : io.stdout).write(`${usage()}\n`);
    return first === undefined ? EXIT_USAGE : EXIT_OK;
  }
  const command = find(argv);
  if (!command) {
    io.stderr.write(
      `error: unknown command: ${argv
        .slice(0, 2)
        .filter((a) => !a.startsWith('-'))
        .join(' ')}\n${usage()}\n`,
    );
    return EXIT_USAGE;
  }
  try {
    return await command.run(argv.slice(command.name.split(' ').length), io);
  } catch (err) {
    if (err instanceof HelpRequested) {
      io.stdout.write(`usage: npm run cli -- ${err.usage}\n\n${command.summary}\n`);
      return EXIT_OK;
    }
    if (err instanceof UsageError) {
      io.stderr.write(`error: ${err.message}\nusage: npm run cli -- ${err.usage ?? command.usage}\n`);
      return EXIT_USAGE;
    }
    io.stderr.write(`error: ${describe(err)}\n`);
    return EXIT_FAILED;
  }
}

/** One line for an expected failure; AWS and other errors keep their name (ResourceNotFoundException says a lot). */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err instanceof CliError || err.name === 'Error' || err.name.endsWith('NotFoundError')) return err.message;
  return `${err.name}: ${err.message}`;
}
