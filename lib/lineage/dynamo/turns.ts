// Conversation turns (SPEC T1-T6): one writer per conversation at a time. A turn lives on the
// conversation's live session record (turn-row.ts); every grant is one conditional write of that
// record, and writes carrying the turn's token check it in their own transaction (sessions.ts).
//
// Enqueue is fair across containers: waiters join a list on the record in arrival order, each
// with its own deadline. Only the first waiter still within its deadline may be granted once no
// turn is live (a conditional write on the turn state as it read it), and plain begins refuse
// while anyone waits, so nobody jumps the queue; a waiter that gives up (or dies) is skipped.
import type { SessionRef } from '../../session-ref.js';
import { ConversationBusyError } from '../turn-errors.js';
import type { BeginTurnInput, TurnCredential, TurnGrant, TurnPolicy, TurnView } from '../types.js';
import { withDefaults, type MetaItem, type StoredMeta, type StoredTurn, type TurnWaiter } from './meta-row.js';
import { assertLive } from './links.js';
import { isConditionFailure, sleep } from './retry.js';
import { oldImageOf, type Table } from './table.js';
import { LIVE, NO_LIVE_TURN, NO_TURN_WAITERS, OUR_TURN, turnStateCondition } from './conditions.js';
import { liveTurn, newTurn, turnGrant, turnRefusal, turnView, hashToken } from './turn-row.js';
import { rollbackTurn } from './turn-rollback.js';

/** How often a queued begin looks at the record again. */
const QUEUE_POLL_MS = 100;
/** Rounds a begin goes again after a lost race on the turn state before it answers busy. */
const MAX_ROUNDS = 20;
/** What a first begin moves to prevTurn (there was no turn). */
const NO_TURN: StoredTurn = { turnId: '-', tokenHash: '-', startedAt: 0, expiresAt: 0 };

/**
 * A grant: the new turn becomes current, the one before moves to prevTurn (so its writes learn
 * why they are refused), the fence moves on. `turnFrom`/`turnGen` say where the turn began.
 */
const GRANT =
  'SET #activeTurn = :turn, #prevTurn = if_not_exists(#activeTurn, :noTurn), #turnFrom = if_not_exists(#lastSeq, :zero), #turnGen = if_not_exists(#generation, :zero), ' +
  '#turnAppended = :zero ADD #turnFence :one, #turnSeq :one';

export class Turns {
  constructor(private readonly table: Table) {}

  async begin(ref: SessionRef, input: BeginTurnInput): Promise<TurnGrant> {
    const { stored, token } = newTurn(this.table.now(), input.ttlMs);
    if (input.strategy === 'rollback') {
      const fence = await rollbackTurn(this.table, ref, stored, input.conversationId, GRANT, { ':noTurn': NO_TURN, ':zero': 0, ':one': 1 });
      return turnGrant(stored, token, fence);
    }
    // interrupt: granted at once, whatever is current (the queue too: it supersedes).
    const free = input.strategy === 'interrupt' ? LIVE : `${LIVE} AND ${NO_LIVE_TURN} AND ${NO_TURN_WAITERS}`;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const now = this.table.now();
      const turn = { ...stored, startedAt: now, expiresAt: now + input.ttlMs };
      const r = await this.grant(ref, turn, free, {});
      if ('fence' in r) return turnGrant(turn, token, r.fence);
      const meta = await assertLive(this.table, ref, r.meta);
      const waiters = liveWaiters(meta.turnQueue, now);
      if (!liveTurn(meta, now) && waiters.length === 0 && (meta.turnQueue?.length ?? 0) > 0) {
        // Only waiters that gave up are in the way: take them off and go again.
        await this.setQueue(ref, meta, []);
        continue;
      }
      if (input.strategy === 'enqueue' && input.waitMs > 0) return this.enqueue(ref, input, token, stored);
      throw busy(input.conversationId, meta, now);
    }
    throw busy(input.conversationId, await this.table.requireMeta(ref), this.table.now());
  }

  private async enqueue(ref: SessionRef, input: BeginTurnInput, token: string, stored: StoredTurn): Promise<TurnGrant> {
    const deadline = this.table.now() + input.waitMs;
    const me: TurnWaiter = { id: stored.turnId, until: deadline };
    let meta: MetaItem;
    try {
      const joined = await this.table.update(
        'join turn queue',
        ref,
        { update: 'SET #turnQueue = list_append(if_not_exists(#turnQueue, :empty), :me) ADD #turnSeq :one', condition: LIVE },
        { ':empty': [], ':me': [me], ':one': 1 },
        'ALL_NEW',
      );
      meta = withDefaults(joined.Attributes as StoredMeta);
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      await assertLive(this.table, ref, oldImageOf(err));
      throw err;
    }
    for (;;) {
      const now = this.table.now();
      if (now >= deadline) break;
      const waiters = liveWaiters(meta.turnQueue, now);
      if (!liveTurn(meta, now) && waiters[0]?.id === me.id) {
        const turn = { ...stored, startedAt: now, expiresAt: now + input.ttlMs };
        const r = await this.grant(ref, turn, `${LIVE} AND ${NO_LIVE_TURN} AND ${turnStateCondition(meta)}`, {
          queue: waiters.slice(1),
          turnSeq: meta.turnSeq ?? 0,
        });
        if ('fence' in r) return turnGrant(turn, token, r.fence);
        meta = await assertLive(this.table, ref, r.meta);
        continue;
      }
      const untilFree = liveTurn(meta, now) ? meta.activeTurn!.expiresAt - now + 1 : QUEUE_POLL_MS;
      await sleep(Math.max(1, Math.min(QUEUE_POLL_MS, untilFree, deadline - now)));
      meta = await assertLive(this.table, ref, await this.table.getMeta(ref));
    }
    // Gave up: leave the queue (a waiter that cannot is skipped once its deadline passed anyway).
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const rest = (meta.turnQueue ?? []).filter((w) => w.id !== me.id && w.until >= this.table.now());
      if (await this.setQueue(ref, meta, rest)) break;
      const fresh = await this.table.getMeta(ref);
      if (!fresh) break;
      meta = fresh;
    }
    throw busy(input.conversationId, meta, this.table.now());
  }

  /** One conditional grant; the record as it stood when it was refused. */
  private async grant(
    ref: SessionRef,
    turn: StoredTurn,
    condition: string,
    q: { queue?: TurnWaiter[]; turnSeq?: number },
  ): Promise<{ fence: number } | { meta: MetaItem | undefined }> {
    try {
      const out = await this.table.update(
        'begin turn',
        ref,
        { update: q.queue ? GRANT.replace('SET ', 'SET #turnQueue = :queue, ') : GRANT, condition },
        {
          ':turn': turn,
          ':noTurn': NO_TURN,
          ':zero': 0,
          ':one': 1,
          ':now': turn.startedAt,
          ...(q.queue ? { ':queue': q.queue } : {}),
          ...(q.turnSeq !== undefined ? { ':turnSeq': q.turnSeq } : {}),
        },
        'ALL_NEW',
      );
      const meta = withDefaults(out.Attributes as StoredMeta);
      this.table.records.set(meta);
      return { fence: meta.turnFence ?? 1 };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      return { meta: oldImageOf(err) };
    }
  }

  private async setQueue(ref: SessionRef, meta: MetaItem, queue: TurnWaiter[]): Promise<boolean> {
    return this.table.updateIf(
      'update turn queue',
      ref,
      { update: 'SET #turnQueue = :queue ADD #turnSeq :one', condition: `${LIVE} AND ${turnStateCondition(meta)}` },
      { ':queue': queue, ':one': 1, ':turnSeq': meta.turnSeq ?? 0 },
    );
  }

  /** Extends the current turn to now + ttlMs (T6: an expired turn cannot be revived). */
  async heartbeat(ref: SessionRef, cred: TurnCredential, ttlMs: number): Promise<TurnView> {
    const now = this.table.now();
    const meta = await this.ours(ref, cred, 'heartbeat turn', {
      update: 'SET #activeTurn.#expiresAt = :exp ADD #turnSeq :one',
      values: { ':exp': now + ttlMs },
    });
    return turnView(meta.activeTurn!);
  }

  /** Ends the current turn; ending it again is a no-op (the same token only). */
  async end(ref: SessionRef, cred: TurnCredential): Promise<void> {
    try {
      await this.ours(ref, cred, 'end turn', {
        update: 'SET #activeTurn.#expiresAt = :zero, #activeTurn.#ended = :true ADD #turnSeq :one',
        values: { ':zero': 0, ':true': true },
      });
    } catch (err) {
      const meta = await this.table.getMeta(ref);
      const t = meta?.activeTurn?.turnId === cred.turnId ? meta.activeTurn : meta?.prevTurn;
      if (t?.turnId === cred.turnId && t.ended && t.tokenHash === hashToken(cred.token)) return;
      throw err;
    }
  }

  /** An update of our own current turn, or the refusal its failed condition explains. */
  private async ours(
    ref: SessionRef,
    cred: TurnCredential,
    what: string,
    u: { update: string; values: Record<string, unknown> },
  ): Promise<MetaItem> {
    const now = this.table.now();
    try {
      const out = await this.table.update(
        what,
        ref,
        { update: u.update, condition: `${LIVE} AND ${OUR_TURN}` },
        { ...u.values, ':one': 1, ':turnId': cred.turnId, ':tokenHash': hashToken(cred.token), ':now': now },
        'ALL_NEW',
      );
      return withDefaults(out.Attributes as StoredMeta);
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      const meta = await assertLive(this.table, ref, oldImageOf(err));
      throw turnRefusal(meta, cred, now) ?? err;
    }
  }

  /** The current turn (never its token), or null. */
  async current(ref: SessionRef): Promise<TurnView | null> {
    const meta = await assertLive(this.table, ref, await this.table.getMeta(ref));
    const t = liveTurn(meta, this.table.now());
    return t ? turnView(t) : null;
  }

  /** T5: whether writes to the conversation need a turn token. */
  async setPolicy(ref: SessionRef, policy: TurnPolicy): Promise<void> {
    const update = policy === 'required' ? 'SET #turnPolicy = :required ADD #turnSeq :one' : 'REMOVE #turnPolicy ADD #turnSeq :one';
    try {
      await this.table.update('set turn policy', ref, { update, condition: LIVE }, { ':required': 'required', ':one': 1 });
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      await assertLive(this.table, ref, oldImageOf(err));
      throw err;
    }
  }
}

function liveWaiters(queue: TurnWaiter[] | undefined, now: number): TurnWaiter[] {
  return (queue ?? []).filter((w) => w.until >= now);
}

/** 409 conversation_busy naming the active turn (null: only waiters are ahead). */
export function busy(conversationId: string, meta: MetaItem, now: number): ConversationBusyError {
  const t = liveTurn(meta, now);
  return new ConversationBusyError(conversationId, t ? turnView(t) : null);
}
