// `sessions show` and `lineage`: read-only views of the lineage store, as an operator needs them
// (the raw record, not the API's view of it).
import type { SessionRecord } from '../../../lib/lineage/types.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import type { SessionRef } from '../../../lib/session-ref.js';
import { SESSION_ID_PATTERN } from '../../../lib/api/schemas.js';
import { parseCommand, parseSessionCommand, tenantOf } from '../args.js';
import { conversationIdOf } from './conversations.js';
import type { Command } from '../command.js';
import { CliError, EXIT_OK } from '../errors.js';
import { columns, emit, relative } from '../output.js';
import { withTarget, type Target } from '../target.js';

export async function storeOf(target: Target): Promise<DynamoLineageStore> {
  const { client, tableName } = await target.table();
  return new DynamoLineageStore({ client, tableName });
}

/** Not found, or deleted (the store answers both as null; an operator wants to know which). */
async function notFound(store: DynamoLineageStore, ref: SessionRef): Promise<CliError> {
  const deletedAt = await store.deletedAt(ref);
  const why = deletedAt ? `was deleted at ${deletedAt}` : 'not found';
  return new CliError(`session ${ref.sessionId} of tenant ${ref.tenantId} ${why}`);
}

function stateOf(s: SessionRecord): string {
  if (s.deletedAt) return `deleted at ${s.deletedAt}`;
  if (s.endedAt || s.childSessionId) return `ended${s.endReason ? ` (${s.endReason})` : ''}${s.endedAt ? ` at ${s.endedAt}` : ''}`;
  return 'live';
}

function showLines(s: SessionRecord, liveTip: string | null): string[] {
  const links = [
    s.rootSessionId && `root ${s.rootSessionId}`,
    s.parentSessionId && `parent ${s.parentSessionId}`,
    s.childSessionId && `child ${s.childSessionId}`,
  ].filter(Boolean);
  const a = s.attempt;
  const rows: [string, string][] = [
    ['format', s.format],
    ['state', stateOf(s)],
    ['created', s.createdAt],
    ['links', links.length ? links.join(', ') : 'none (a root with no child)'],
    [
      'live tip',
      liveTip === null ? 'none (the chain ends in a deleted session)' : liveTip === s.sessionId ? `${liveTip} (this session)` : liveTip,
    ],
    ['generation', String(s.generation)],
    ['fence', s.fence === undefined ? 'none (no attempt yet)' : String(s.fence)],
    ['items', `${s.messageCount} (last seq ${s.lastSeq})`],
    ['tokens', `~${s.tokenEstimate} (estimate)`],
    [
      'attempt',
      a
        ? `${a.attemptId} by ${a.holder}, fence ${a.fence}, started ${a.startedAt}, lease ${Date.now() < a.leaseExpiresAt ? 'expires' : 'expired'} ${relative(a.leaseExpiresAt)}, watermark ${a.watermark}, pending child ${a.pendingChildId}`
        : 'none in flight',
    ],
    ['last activity', s.lastActivity ? `${s.lastActivity.label} at ${s.lastActivity.at}` : 'none'],
  ];
  if (s.source !== undefined) rows.push(['source', s.source]);
  if (s.metadata !== undefined) rows.push(['metadata', JSON.stringify(s.metadata)]);
  return [`session ${s.sessionId} (tenant ${s.tenantId})`, ...columns(rows).map((l) => `  ${l}`)];
}

const SHOW_USAGE = 'sessions show <id> --tenant <t> [--json] [--stage <s> [--region <r>] [--table <name>]]';

export const sessionsShow: Command = {
  name: 'sessions show',
  usage: SHOW_USAGE,
  summary: 'a session record (format, links, counts, tokens, in-flight attempt, last activity) and its live tip',
  async run(args, io) {
    const { values, ref } = parseSessionCommand(args, SHOW_USAGE);
    return withTarget(values, io, async (target) => {
      const store = await storeOf(target);
      const session = await store.getSession(ref);
      if (!session) throw await notFound(store, ref);
      const liveTip = await store.liveTip(ref);
      emit(io, values.json, { session, liveTip }, () => showLines(session, liveTip));
      return EXIT_OK;
    });
  },
};

/** A session id or a conversation id (K1), as `lineage` and `lease` take them. */
export function idArgument(id: string | undefined, usage: string): string {
  if (id !== undefined && SESSION_ID_PATTERN.test(id)) return id;
  return conversationIdOf(id, usage);
}

/**
 * A session id first (a deleted one included: it is reported as such); else a conversation id (K1),
 * resolved to its live session.
 */
export async function resolveId(
  store: DynamoLineageStore,
  tenantId: string,
  id: string,
): Promise<{ ref: SessionRef; conversationId?: string }> {
  const asSession: SessionRef = { tenantId, sessionId: id };
  if (SESSION_ID_PATTERN.test(id) && (await store.hasRecord(asSession))) return { ref: asSession };
  const conversation = await store.getConversation(tenantId, id);
  if (conversation) return { ref: { tenantId, sessionId: conversation.liveSessionId }, conversationId: id };
  if (!SESSION_ID_PATTERN.test(id)) throw new CliError(`conversation ${id} of tenant ${tenantId} not found`);
  return { ref: asSession };
}

const LINEAGE_USAGE = 'lineage <session or conversation id> --tenant <t> [--json] [--stage <s> [--region <r>] [--table <name>]]';

export const lineage: Command = {
  name: 'lineage',
  usage: LINEAGE_USAGE,
  summary: 'the chain root → tip (of a session, or of a conversation), marking the live tip and deleted sessions',
  async run(args, io) {
    const { values, positionals } = parseCommand(args, {
      usage: LINEAGE_USAGE,
      positionals: ['id'],
      options: { tenant: { type: 'string' } },
      required: ['tenant'],
    });
    const tenantId = tenantOf(values.tenant, LINEAGE_USAGE);
    const id = idArgument(positionals[0], LINEAGE_USAGE);
    return withTarget(values, io, async (target) => {
      const store = await storeOf(target);
      const { ref, conversationId } = await resolveId(store, tenantId, id);
      const chain = await store.lineage(ref).catch(async (err: unknown) => {
        throw err instanceof Error && err.name === 'SessionNotFoundError' ? await notFound(store, ref) : err;
      });
      const liveTip = await store.liveTip(ref);
      const sessions = chain.map((s) => ({
        sessionId: s.sessionId,
        liveTip: s.sessionId === liveTip,
        deleted: s.deletedAt !== undefined,
        state: stateOf(s),
        createdAt: s.createdAt,
        generation: s.generation,
        messageCount: s.messageCount,
        tokenEstimate: s.tokenEstimate,
      }));
      const conversation = conversationId ?? chain[0]?.conversationId;
      emit(
        io,
        values.json,
        { tenantId: ref.tenantId, sessionId: ref.sessionId, conversationId: conversation ?? null, liveTip, sessions },
        () => [
          `lineage of ${conversationId ? `conversation ${conversationId}` : ref.sessionId} (tenant ${ref.tenantId}${!conversationId && conversation ? `, conversation ${conversation}` : ''}), root → tip:`,
          ...columns(
            sessions.map((s, i) => [
              s.liveTip ? '*' : s.deleted ? 'x' : ' ',
              `${i + 1}.`,
              s.sessionId + (!conversationId && s.sessionId === ref.sessionId ? ' (asked)' : ''),
              s.state,
              `${s.messageCount} item${s.messageCount === 1 ? '' : 's'}, ~${s.tokenEstimate} tokens`,
            ]),
          ).map((l) => `  ${l}`),
          liveTip === null ? 'no live tip: the chain ends in a deleted session' : `* live tip ${liveTip}; x deleted`,
        ],
      );
      return EXIT_OK;
    });
  },
};
