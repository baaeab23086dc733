// `conversations export` (SPEC H5) and `tenants set-retention` (SPEC H3): a conversation's whole
// history as JSON Lines on stdout, paged to the end (the same lines as GET .../export), and the
// tenant's retention setting that bounds its conversations' own.
import { exportPage } from '../../../lib/api/export.js';
import { MIN_RETENTION_SECONDS } from '../../../lib/lineage/history.js';
import { DEFAULT_PAGE_ITEMS, MAX_PAGE_ITEMS } from '../../../lib/lineage/limits.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { parseCommand, tenantOf } from '../args.js';
import type { Command } from '../command.js';
import { CliError, EXIT_OK, UsageError } from '../errors.js';
import { emit } from '../output.js';
import { withTarget, type Target } from '../target.js';
import { conversationIdOf } from './conversations.js';

const TARGET = '[--stage <s> [--region <r>] [--table <name>]]';

async function storeOf(target: Target): Promise<DynamoLineageStore> {
  const { client, tableName } = await target.table();
  return new DynamoLineageStore({ client, tableName });
}

const EXPORT_USAGE = `conversations export <id> --tenant <t> [--limit <n>] ${TARGET}  (> file.jsonl)`;

export const conversationsExport: Command = {
  name: 'conversations export',
  usage: EXPORT_USAGE,
  summary: "a conversation's whole history as JSON Lines on stdout, every page (SPEC H5)",
  async run(args, io) {
    const line = parseCommand(args, {
      usage: EXPORT_USAGE,
      positionals: ['id'],
      options: { tenant: { type: 'string' }, limit: { type: 'string' } },
      required: ['tenant'],
    });
    const values = line.values as typeof line.values & { tenant?: string; limit?: string };
    const tenantId = tenantOf(values.tenant, EXPORT_USAGE);
    const conversationId = conversationIdOf(line.positionals[0], EXPORT_USAGE);
    const limit = values.limit === undefined ? DEFAULT_PAGE_ITEMS : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_ITEMS)
      throw new UsageError(`invalid --limit "${values.limit}": 1-${MAX_PAGE_ITEMS}`, EXPORT_USAGE);
    return withTarget(values, io, async (target) => {
      const store = await storeOf(target);
      let cursor: string | undefined;
      do {
        const page = await exportPage(store, tenantId, conversationId, { cursor, limit }).catch((err: unknown) => {
          if ((err as { code?: string }).code === 'not_found')
            throw new CliError(`conversation ${conversationId} of tenant ${tenantId} not found`);
          throw err;
        });
        io.stdout.write(page.text);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      return EXIT_OK;
    });
  },
};

const RETENTION_USAGE = `tenants set-retention <tenant> [--archived-seconds <n>|default] [--ended-session-seconds <n>|default] [--json] ${TARGET}`;

function secondsOf(v: string | undefined, flag: string): number | null | undefined {
  if (v === undefined) return undefined;
  if (v === 'default') return null;
  const n = Number(v);
  if (!Number.isInteger(n) || n < MIN_RETENTION_SECONDS)
    throw new UsageError(
      `invalid --${flag} "${v}": a whole number of seconds, at least ${MIN_RETENTION_SECONDS}, or default`,
      RETENTION_USAGE,
    );
  return n;
}

export const tenantsSetRetention: Command = {
  name: 'tenants set-retention',
  usage: RETENTION_USAGE,
  summary: "how long a tenant's replaced and rotated items stay readable, at most (SPEC H3)",
  async run(args, io) {
    const line = parseCommand(args, {
      usage: RETENTION_USAGE,
      positionals: ['tenant'],
      options: { 'archived-seconds': { type: 'string' }, 'ended-session-seconds': { type: 'string' } },
    });
    const values = line.values as typeof line.values & { 'archived-seconds'?: string; 'ended-session-seconds'?: string };
    const tenantId = tenantOf(line.positionals[0], RETENTION_USAGE);
    const archivedSeconds = secondsOf(values['archived-seconds'], 'archived-seconds');
    const endedSessionSeconds = secondsOf(values['ended-session-seconds'], 'ended-session-seconds');
    return withTarget(values, io, async (target) => {
      const store = await storeOf(target);
      const r = await store.setTenantRetention(tenantId, {
        ...(archivedSeconds !== undefined ? { archivedSeconds } : {}),
        ...(endedSessionSeconds !== undefined ? { endedSessionSeconds } : {}),
      });
      emit(io, values.json, { tenantId, retention: r }, () => [
        `retention of tenant ${tenantId}:`,
        `  archived (replaced in place)  ${r.archivedSeconds ?? 'default'} s`,
        `  ended sessions (rotated)      ${r.endedSessionSeconds ?? 'as long as the conversation'}${r.endedSessionSeconds ? ' s' : ''}`,
      ]);
      return EXIT_OK;
    });
  },
};
