// Argument parsing for every command: node:util parseArgs (strict), the options all commands
// share, and the checks that turn a bad command line into a UsageError (exit 2) before any I/O.
import { parseArgs } from 'node:util';
import { TENANT_ID_PATTERN } from '../../lib/api/api-keys.js';
import { SESSION_ID_PATTERN } from '../../lib/api/schemas.js';
import type { SessionRef } from '../../lib/session-ref.js';
import { UsageError } from './errors.js';

type OptionSpec = { type: 'string' | 'boolean'; short?: string };
type OptionSpecs = Record<string, OptionSpec>;

/** Accepted by every command: output format, help, and which stack to talk to (target.ts). */
export const COMMON_OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  stage: { type: 'string' },
  region: { type: 'string' },
  table: { type: 'string' },
} as const satisfies OptionSpecs;

type Values<O extends OptionSpecs> = { [K in keyof O]?: O[K]['type'] extends 'boolean' ? boolean : string };

export interface CommandLine<O extends OptionSpecs> {
  values: Values<typeof COMMON_OPTIONS & O>;
  positionals: string[];
}

/** `--help` on a command: its usage goes to stdout and the exit code is 0. */
export class HelpRequested extends Error {
  override readonly name = 'HelpRequested';
  constructor(readonly usage: string) {
    super(usage);
  }
}

export interface CommandSyntax<O extends OptionSpecs> {
  usage: string;
  /** Names of the positional arguments, all required. */
  positionals?: readonly string[];
  /** Names of positional arguments after those that may be left off. */
  optionalPositionals?: readonly string[];
  options?: O;
  required?: readonly (keyof O & string)[];
}

export function parseCommand<O extends OptionSpecs = Record<never, OptionSpec>>(args: string[], syntax: CommandSyntax<O>): CommandLine<O> {
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args, options: { ...COMMON_OPTIONS, ...syntax.options }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err), syntax.usage);
  }
  if (parsed.values.help) throw new HelpRequested(syntax.usage);
  const expected = syntax.positionals ?? [];
  if (parsed.positionals.length < expected.length) throw new UsageError(`missing <${expected[parsed.positionals.length]}>`, syntax.usage);
  const most = expected.length + (syntax.optionalPositionals?.length ?? 0);
  if (parsed.positionals.length > most) throw new UsageError(`unexpected argument: ${parsed.positionals[most]}`, syntax.usage);
  for (const name of syntax.required ?? []) {
    if (!parsed.values[name]) throw new UsageError(`--${name} is required`, syntax.usage);
  }
  return parsed as CommandLine<O>;
}

const TENANT_OPTION = { tenant: { type: 'string' } } as const satisfies OptionSpecs;

/** `<id> --tenant <t>` plus the command's own options: the line of every per-session command, and the session it names. */
export function parseSessionCommand<O extends OptionSpecs = Record<never, OptionSpec>>(
  args: string[],
  usage: string,
  own: { options?: O; required?: readonly (keyof O & string)[] } = {},
): CommandLine<typeof TENANT_OPTION & O> & { ref: SessionRef } {
  const line = parseCommand<typeof TENANT_OPTION & O>(args, {
    usage,
    positionals: ['id'],
    options: { ...TENANT_OPTION, ...own.options } as typeof TENANT_OPTION & O,
    required: ['tenant', ...(own.required ?? [])],
  });
  return { ...line, ref: sessionRefOf(line.values.tenant as string | undefined, line.positionals[0], usage) };
}

export function tenantOf(tenant: string | undefined, usage: string): string {
  if (!tenant || !TENANT_ID_PATTERN.test(tenant))
    throw new UsageError(`invalid --tenant "${tenant ?? ''}": 1-64 letters, digits, '_', '.', '-'`, usage);
  return tenant;
}

export function sessionRefOf(tenant: string | undefined, sessionId: string | undefined, usage: string): SessionRef {
  const tenantId = tenantOf(tenant, usage);
  if (!sessionId || !SESSION_ID_PATTERN.test(sessionId))
    throw new UsageError(`invalid session id "${sessionId ?? ''}": 1-128 letters, digits, '_', '-'`, usage);
  return { tenantId, sessionId };
}
