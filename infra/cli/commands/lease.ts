// `lease show | release`: the per-session Redlock lease, node by node. Release is token-checked
// end to end: it goes through SessionLease.release (redlock's delete-if-value-is-token script),
// so it can never delete another holder's lease, even one that took over a moment ago.
import type { Redis } from 'ioredis';
import { createRedisClients, waitForRedis } from '../../../lib/aws-clients.js';
import { quorumSize } from '../../../lib/lease/quorum.js';
import { SessionLease } from '../../../lib/lease/session-lease.js';
import { sessionKey, type SessionRef } from '../../../lib/session-ref.js';
import { parseCommand, tenantOf } from '../args.js';
import type { Command } from '../command.js';
import { CliError, EXIT_FAILED, EXIT_OK } from '../errors.js';
import { confirm, type CliIo } from '../io.js';
import { columns, emit, note, redisNodeLabel } from '../output.js';
import { withTarget, type Target, type TargetFlags } from '../target.js';
import { idArgument, resolveId, storeOf } from './sessions.js';

const TARGET = '[--stage <s> [--region <r>]]';
const SHOW_USAGE = `lease show <session or conversation id> --tenant <t> [--json] ${TARGET}`;
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

/** How many nodes hold `token`, and whether that is a majority (a real lease) or a leftover minority. */
function holding(state: LeaseState, token: string): string {
  const n = state.nodes.filter((s) => s.holder === token).length;
  return `${n}/${state.nodes.length} nodes${n >= state.quorum ? '' : `, below the quorum of ${state.quorum}: a leftover that expires on its own`}`;
}

/** Connects to every node of the target, runs `fn`, disconnects. Unreachable nodes are reported, not fatal. */
/** The session whose lease to read: a conversation id (K1) names its live session, as in `lineage`. */
async function leaseRefOf(target: Target, io: CliIo, tenantId: string, id: string): Promise<SessionRef> {
  let store;
  try {
    store = await storeOf(target);
  } catch (err) {
    // No table for this target (only Redis is configured): the id can only be a session id.
    if (!(err instanceof CliError)) throw err;
    note(io, `${err.message}; reading ${id} as a session id (a conversation id needs the table)`);
    return { tenantId, sessionId: id };
  }
  const { ref, conversationId } = await resolveId(store, tenantId, id);
  if (conversationId) note(io, `conversation ${conversationId}: its live session is ${ref.sessionId}`);
  return ref;
}

async function withLease<T>(
  flags: TargetFlags,
  io: CliIo,
  who: { tenantId: string; id: string },
  fn: (ctx: { lease: SessionLease; ref: SessionRef; read: () => Promise<LeaseState> }) => Promise<T>,
): Promise<T> {
  return withTarget(flags, io, async (target) => {
    const urls = await target.redisUrls();
    const ref = await leaseRefOf(target, io, who.tenantId, who.id);
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
      return await fn({ lease, ref, read });
    } finally {
      clients.forEach((c) => c.disconnect());
    }
  });
}

export const leaseShow: Command = {
  name: 'lease show',
  usage: SHOW_USAGE,
  summary: "the session lease's holder token on each Redis node (or none); a conversation id names its live session",
  async run(args, io) {
    const { values, positionals } = parseCommand(args, {
      usage: SHOW_USAGE,
      positionals: ['id'],
      options: { tenant: { type: 'string' } },
      required: ['tenant'],
    });
    const who = { tenantId: tenantOf(values.tenant, SHOW_USAGE), id: idArgument(positionals[0], SHOW_USAGE) };
    return withLease(values, io, who, async ({ read }) => {
      const state = await read();
      const tokens = [...new Set(state.nodes.flatMap((n) => (n.holder ? [n.holder] : [])))];
      emit(io, values.json, state, () => [
        `lease ${state.redisKey} on ${state.nodes.length} nodes (quorum ${state.quorum}):`,
        ...nodeLines(state),
        tokens.length === 0 ? 'not held' : tokens.map((t) => `held by ${t} on ${holding(state, t)}`).join('\n'),
      ]);
      return EXIT_OK;
    });
  },
};

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
