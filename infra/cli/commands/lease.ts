// `lease show | release`: the per-session Redlock lease, node by node. Release is token-checked
// end to end: it goes through SessionLease.release (redlock's delete-if-value-is-token script),
// so it can never delete another holder's lease, even one that took over a moment ago.
import type { Redis } from 'ioredis';
import { createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { quorumSize } from '../../../lib/lease/quorum.js';
import { SessionLease } from '../../../lib/lease/session-lease.js';
import { heldAttemptIdOf } from '../../../lib/compaction/held-attempt-id.js';
import type { SessionRecord } from '../../../lib/lineage/types.js';
import { sessionKey, type SessionRef } from '../../../lib/session-ref.js';
import { parseCommand, tenantOf } from '../args.js';
import type { Command } from '../command.js';
import { CliError, EXIT_FAILED, EXIT_OK, UsageError } from '../errors.js';
import { confirm, type CliIo } from '../io.js';
import { columns, emit, note, redisNodeLabel } from '../output.js';
import { withTarget, type Target, type TargetFlags } from '../target.js';
import { idArgument, resolveId, storeOf } from './sessions.js';

const TARGET = '[--stage <s> [--region <r>]]';
const SHOW_USAGE = `lease show [<session or conversation id> --tenant <t> | --tenant <t>] [--json] ${TARGET}`;
const RELEASE_USAGE = `lease release <session or conversation id> --tenant <t> --token <token> [--yes] [--json] ${TARGET}`;

interface NodeState {
  node: string;
  /** The token stored on this node, null when free; undefined when the node did not answer. */
  holder?: string | null;
  ttlMs?: number;
  error?: string;
}

interface LeaseState {
  sessionKey: string;
  redisKey: string;
  quorum: number;
  nodes: NodeState[];
}

async function readNodes(clients: readonly Redis[], urls: readonly string[], redisKey: string): Promise<NodeState[]> {
  return Promise.all(
    clients.map(async (c, i): Promise<NodeState> => {
      const node = redisNodeLabel(urls[i]!);
      try {
        const [holder, ttlMs] = await Promise.all([c.get(redisKey), c.pttl(redisKey)]);
        return holder === null ? { node, holder: null } : { node, holder, ttlMs };
      } catch (err) {
        return { node, error: err instanceof Error ? err.message : String(err) };
      }
    }),
  );
}

function nodeLines(state: LeaseState): string[] {
  return columns(
    state.nodes.map((n) => [
      n.node,
      n.error !== undefined ? `unreachable: ${n.error}` : n.holder === null ? 'none' : `${n.holder}`,
      n.ttlMs !== undefined && n.ttlMs >= 0 ? `(expires in ${(n.ttlMs / 1000).toFixed(1)} s)` : '',
    ]),
  ).map((l) => `  ${l}`);
}

/**
 * A held attempt as an operator sees it (SPEC E1, E8): the recorded holder is the Redis value, a
 * digest of the agent's lease token, never the token itself.
 */
interface HeldView {
  tenantId: string;
  sessionId: string;
  conversationId: string | null;
  attemptId: string;
  mode: string;
  holder: string;
  expiresAt: string;
  committing: boolean;
}

function heldView(s: SessionRecord): HeldView | null {
  const a = s.attempt;
  const attemptId = heldAttemptIdOf(s);
  if (!a?.held || !attemptId) return null;
  return {
    tenantId: s.tenantId,
    sessionId: s.sessionId,
    conversationId: s.conversationId ?? null,
    attemptId,
    mode: a.held.mode,
    holder: a.holder,
    expiresAt: new Date(a.leaseExpiresAt).toISOString(),
    committing: a.held.committing !== undefined,
  };
}

function heldLines(held: readonly HeldView[]): string[] {
  return columns([
    ['TENANT', 'SESSION', 'MODE', 'EXPIRES', 'HOLDER', 'ATTEMPT'],
    ...held.map((h) => [h.tenantId, h.sessionId, `${h.mode}${h.committing ? ' (committing)' : ''}`, h.expiresAt, h.holder, h.attemptId]),
  ]);
}

/** How many nodes hold `token`, and whether that is a majority (a real lease) or a leftover minority. */
function holding(state: LeaseState, token: string): string {
  const n = state.nodes.filter((s) => s.holder === token).length;
  return `${n}/${state.nodes.length} nodes${n >= state.quorum ? '' : `, below the quorum of ${state.quorum}: a leftover that expires on its own`}`;
}

/**
 * The session whose lease to read: a conversation id (K1) names its live session, as in `lineage`;
 * with its record when the target has a table (its held attempt, if any).
 */
async function leaseRefOf(
  target: Target,
  io: CliIo,
  tenantId: string,
  id: string,
): Promise<{ ref: SessionRef; session?: SessionRecord | null }> {
  let store;
  try {
    store = await storeOf(target);
  } catch (err) {
    // No table for this target (only Redis is configured): the id can only be a session id.
    if (!(err instanceof CliError)) throw err;
    note(io, `${err.message}; reading ${id} as a session id (a conversation id needs the table)`);
    return { ref: { tenantId, sessionId: id } };
  }
  const { ref, conversationId } = await resolveId(store, tenantId, id);
  if (conversationId) note(io, `conversation ${conversationId}: its live session is ${ref.sessionId}`);
  return { ref, session: await store.getSession(ref) };
}

/** Connects to every node of the target, runs `fn`, disconnects. Unreachable nodes are reported, not fatal. */

async function withLease<T>(
  flags: TargetFlags,
  io: CliIo,
  who: { tenantId: string; id: string },
  fn: (ctx: { lease: SessionLease; ref: SessionRef; read: () => Promise<LeaseState>; held: HeldView | null }) => Promise<T>,
): Promise<T> {
  return withTarget(flags, io, async (target) => {
    const urls = await target.redisUrls();
    const { ref, session } = await leaseRefOf(target, io, who.tenantId, who.id);
    const held = session ? heldView(session) : null;
    const sessionKeyValue = sessionKey(ref);
    const clients = createRedisClients(urls);
    try {
      await waitForRedis(clients);
      const lease = new SessionLease({ clients });
      const redisKey = lease.keyOf(sessionKeyValue);
      const read = async (): Promise<LeaseState> => {
        const nodes = await readNodes(clients, urls, redisKey);
        if (nodes.every((n) => n.error !== undefined))
          throw new CliError(`no Redis node answered: ${nodes.map((n) => `${n.node}: ${n.error}`).join('; ')}`);
        return { sessionKey: sessionKeyValue, redisKey, quorum: quorumSize(urls.length), nodes };
      };
      return await fn({ lease, ref, read, held });
    } finally {
      clients.forEach((c) => c.disconnect());
    }
  });
}

export const leaseShow: Command = {
  name: 'lease show',
  usage: SHOW_USAGE,
  summary:
    "with an id: the session lease's holder on each Redis node, and its held attempt if any; without: the held attempts in flight (of --tenant, or all)",
  async run(args, io) {
    const { values, positionals } = parseCommand(args, {
      usage: SHOW_USAGE,
      optionalPositionals: ['id'],
      options: { tenant: { type: 'string' } },
    });
    if (positionals[0] === undefined)
      return listHeld(values, io, values.tenant === undefined ? undefined : tenantOf(values.tenant, SHOW_USAGE));
    if (values.tenant === undefined) throw new UsageError('--tenant is required with an id', SHOW_USAGE);
    const who = { tenantId: tenantOf(values.tenant, SHOW_USAGE), id: idArgument(positionals[0], SHOW_USAGE) };
    return withLease(values, io, who, async ({ read, held }) => {
      const state = await read();
      const tokens = [...new Set(state.nodes.flatMap((n) => (n.holder ? [n.holder] : [])))];
      emit(io, values.json, { ...state, heldAttempt: held }, () => [
        `lease ${state.redisKey} on ${state.nodes.length} nodes (quorum ${state.quorum}):`,
        ...nodeLines(state),
        tokens.length === 0 ? 'not held' : tokens.map((t) => `held by ${t} on ${holding(state, t)}`).join('\n'),
        ...(held ? [`held attempt (the agent's own engine, E1): ${held.mode}, expires ${held.expiresAt}, attempt ${held.attemptId}`] : []),
      ]);
      return EXIT_OK;
    });
  },
};

/** `lease show` without an id: the held attempts in flight, from the attempts index (a Query per shard, no Scan). */
async function listHeld(flags: TargetFlags & { json?: boolean | undefined }, io: CliIo, tenantId: string | undefined): Promise<number> {
  return withTarget(flags, io, async (target) => {
    const store = await storeOf(target);
    const held = (await store.listHeldAttempts(tenantId)).flatMap((s) => heldView(s) ?? []);
    held.sort((a, b) => a.expiresAt.localeCompare(b.expiresAt));
    emit(io, flags.json, { heldAttempts: held }, () =>
      held.length === 0 ? [`no held attempts in flight${tenantId ? ` for tenant ${tenantId}` : ''}`] : heldLines(held),
    );
    return EXIT_OK;
  });
}

export const leaseRelease: Command = {
  name: 'lease release',
  usage: RELEASE_USAGE,
  summary: "token-checked release of a stuck lease (asks first); never deletes another holder's lease",
  async run(args, io) {
    const { values, positionals } = parseCommand(args, {
      usage: RELEASE_USAGE,
      positionals: ['id'],
      options: { tenant: { type: 'string' }, token: { type: 'string' }, yes: { type: 'boolean' } },
      required: ['tenant', 'token'],
    });
    const who = { tenantId: tenantOf(values.tenant, RELEASE_USAGE), id: idArgument(positionals[0], RELEASE_USAGE) };
    const token = values.token!;
    return withLease(values, io, who, async ({ lease, ref, read }) => {
      const before = await read();
      if (!before.nodes.some((n) => n.holder === token)) {
        const current = [...new Set(before.nodes.flatMap((n) => (n.holder ? [n.holder] : [])))];
        throw new CliError(
          `token ${token} is not the current holder of ${before.redisKey} (${current.length ? `held by ${current.join(', ')}` : 'not held'}): nothing released`,
        );
      }
      await confirm(io, `release lease ${before.redisKey} held by ${token} on ${holding(before, token)}`, Boolean(values.yes));
      // The outcome is what the nodes hold afterwards: a token on a minority still gets deleted where it is.
      await lease.release({ sessionKey: sessionKey(ref), token });
      const after = await read();
      const stillHeld = after.nodes.filter((n) => n.holder === token).length;
      const unreachable = after.nodes.filter((n) => n.error !== undefined).length;
      emit(io, values.json, { released: stillHeld === 0, ...after }, () => [
        stillHeld > 0
          ? `token ${token} is still stored on ${stillHeld} node(s):`
          : `released ${after.redisKey} (token ${token})${unreachable ? `; ${unreachable} node(s) unreachable: a copy there expires with its TTL` : ''}:`,
        ...nodeLines(after),
      ]);
      if (stillHeld > 0) return EXIT_FAILED;
      return EXIT_OK;
    });
  },
};
