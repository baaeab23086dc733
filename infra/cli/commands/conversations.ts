// `conversations list | show | delete` (SPEC K1-K3): an operator's view of a tenant's
// conversations, straight from the lineage store.
import { CONVERSATION_ID_PATTERN } from '../../../lib/api/schemas.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import type { ConversationRecord } from '../../../lib/lineage/types.js';
import { parseCommand, tenantOf } from '../args.js';
import type { Command } from '../command.js';
import { CliError, EXIT_OK, UsageError } from '../errors.js';
import { confirm } from '../io.js';
import { columns, emit } from '../output.js';
import { withTarget, type Target } from '../target.js';

const TARGET = '[--json] [--stage <s> [--region <r>] [--table <name>]]';

async function storeOf(target: Target): Promise<DynamoLineageStore> {
  const { client, tableName } = await target.table();
  return new DynamoLineageStore({ client, tableName });
}

export function conversationIdOf(id: string | undefined, usage: string): string {
  if (!id || !CONVERSATION_ID_PATTERN.test(id))
    throw new UsageError(`invalid conversation id "${id ?? ''}": 1-128 letters, digits and '._:@-'`, usage);
  return id;
}

function parseOne(args: string[], usage: string, options: Record<string, { type: 'string' | 'boolean' }> = {}) {
  const line = parseCommand(args, {
    usage,
    positionals: ['id'],
    options: { tenant: { type: 'string' }, ...options },
    required: ['tenant'],
  });
  const values = line.values as typeof line.values & { tenant?: string; yes?: boolean };
  return { values, tenantId: tenantOf(values.tenant, usage), conversationId: conversationIdOf(line.positionals[0], usage) };
}

const LIST_USAGE = `conversations list --tenant <t> [--limit <n>] [--cursor <c>] ${TARGET}`;

export const conversationsList: Command = {
  name: 'conversations list',
  usage: LIST_USAGE,
  summary: "a tenant's conversations, most recently active first (paged)",
  async run(args, io) {
    const { values } = parseCommand(args, {
      usage: LIST_USAGE,
      options: { tenant: { type: 'string' }, limit: { type: 'string' }, cursor: { type: 'string' } },
      required: ['tenant'],
    });
    const tenantId = tenantOf(values.tenant, LIST_USAGE);
    const limit = values.limit === undefined ? 20 : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new UsageError(`invalid --limit "${values.limit}": 1-100`, LIST_USAGE);
    return withTarget(values, io, async (target) => {
      const page = await (await storeOf(target)).listConversations(tenantId, limit, values.cursor);
      // `nextCursor`, as the API names it (GET /conversations), not the store's `next`.
      emit(io, values.json, { conversations: page.conversations, nextCursor: page.next ?? null }, () => [
        `conversations of tenant ${tenantId}, most recently active first:`,
        ...columns(
          page.conversations.map((c) => [
            c.conversationId,
            `live ${c.liveSessionId}`,
            `${c.sessions} session(s)`,
            `${c.messageCount ?? 0} item(s)`,
            `active ${c.activeAt}`,
          ]),
        ).map((l) => `  ${l}`),
        ...(page.conversations.length === 0 ? ['  (none)'] : []),
        ...(page.next ? [`more: --cursor ${page.next}`] : []),
      ]);
      return EXIT_OK;
    });
  },
};

function showLines(c: ConversationRecord, messageCount: number): string[] {
  const rows: [string, string][] = [
    ['format', c.format],
    ['root session', c.rootSessionId],
    ['live session', c.liveSessionId],
    ['sessions', String(c.sessions)],
    ['items', `${messageCount} (live session)`],
    ['created', c.createdAt],
    ['updated', c.updatedAt],
    ['active', c.activeAt],
  ];
  if (c.source !== undefined) rows.push(['source', c.source]);
  if (c.metadata !== undefined) rows.push(['metadata', JSON.stringify(c.metadata)]);
  return [`conversation ${c.conversationId} (tenant ${c.tenantId})`, ...columns(rows).map((l) => `  ${l}`)];
}

const SHOW_USAGE = `conversations show <id> --tenant <t> ${TARGET}`;

export const conversationsShow: Command = {
  name: 'conversations show',
  usage: SHOW_USAGE,
  summary: 'a conversation: its root, live session, chain length and metadata',
  async run(args, io) {
    const { values, tenantId, conversationId } = parseOne(args, SHOW_USAGE);
    return withTarget(values, io, async (target) => {
      const store = await storeOf(target);
      const conversation = await store.getConversation(tenantId, conversationId);
      if (!conversation) throw new CliError(`conversation ${conversationId} of tenant ${tenantId} not found`);
      const live = await store.getSession({ tenantId, sessionId: conversation.liveSessionId });
      const messageCount = live?.messageCount ?? 0;
      emit(io, values.json, { conversation: { ...conversation, messageCount } }, () => showLines(conversation, messageCount));
      return EXIT_OK;
    });
  },
};

const DELETE_USAGE = `conversations delete <id> --tenant <t> [--yes] ${TARGET}`;

export const conversationsDelete: Command = {
  name: 'conversations delete',
  usage: DELETE_USAGE,
  summary: 'delete a conversation and every session of its chain (asks first)',
  async run(args, io) {
    const { values, tenantId, conversationId } = parseOne(args, DELETE_USAGE, { yes: { type: 'boolean' } });
    return withTarget(values, io, async (target) => {
      const store = await storeOf(target);
      const conversation = await store.getConversation(tenantId, conversationId);
      if (!conversation) throw new CliError(`conversation ${conversationId} of tenant ${tenantId} not found`);
      await confirm(
        io,
        `delete conversation ${conversationId} of tenant ${tenantId} and its ${conversation.sessions} session(s)`,
        Boolean(values.yes),
      );
      await store.deleteConversation(tenantId, conversationId);
      emit(io, values.json, { deleted: { tenantId, conversationId, sessions: conversation.sessions } }, () => [
        `deleted conversation ${conversationId} of tenant ${tenantId} (${conversation.sessions} session(s)); its items are purged in the background.`,
      ]);
      return EXIT_OK;
    });
  },
};
