// An OpenAI Agents SDK session (@openai/agents-core 0.20 `Session`, plus its compaction hook)
// kept by the session-lineage service as a conversation (SPEC K1-K3): one id for its whole life,
// whose routes act on the live session. Unlike the SDK's own stores it stays correct with many
// writers on one conversation: another process may compact it (rotating it to a child, or in
// place) at any time, and the service, not this object, follows the chain to the live tip.
//
// Only types are imported from the SDK, so bundling this module adds none of its code.
import type {
  AgentInputItem,
  OpenAIResponsesCompactionArgs,
  OpenAIResponsesCompactionOwnershipAwareSession,
  OpenAIResponsesCompactionResult,
  SessionHistoryRewriteArgs,
  SessionHistoryRewriteAwareSession,
  SessionHistoryTransactionArgs,
  SessionHistoryTransactionAwareSession,
} from '@openai/agents-core';
import { decodeBinary, encodeBinary } from './binary.js';
import type { HeldTurn, LineageClient } from './client.js';
import { chunks, MAX_TAIL } from './chunks.js';
import { BadRequestError, ConflictError, IdempotencyKeyReusedError, LineageError, NotFoundError } from './errors.js';
import { HistoryTransactionError, INVALID_ITEMS, snapshotTransactionArgs, type HistoryTransaction } from './history-snapshot.js';
import { assertJsonValue } from './json-values.js';
import type { CompactWithResult } from './held.js';
import type { BeginTurnRequest, Item, Session } from './types.js';

/** K1's conversation id rule, checked before any request (the service answers 400 otherwise). */
/** K1's rule, less `.` and `..`, which a URL resolves away (`/conversations/..` is `/`): no request could name them. */
const CONVERSATION_ID = /^(?!\.{1,2}$)[A-Za-z0-9._:@-]{1,128}$/;

import type { CompactOptions, LineageSessionOptions } from './agents-options.js';
export type { CompactOptions, LineageCompactionPolicy, LineageSessionEvent, LineageSessionOptions } from './agents-options.js';

export class LineageSession
  implements OpenAIResponsesCompactionOwnershipAwareSession, SessionHistoryTransactionAwareSession, SessionHistoryRewriteAwareSession
{
  #client: LineageClient;
  readonly #opts: LineageSessionOptions;
  /** The conversation id: fixed once chosen (in the constructor, or on first use). */
  #id: string | undefined;
  /** Whether this object's PUT made sure the conversation exists (reset by a confirmed clear). */
  #ensured = false;
  /** The live session the last answer named. */
  #live: string | undefined;
  /** The live session's item count as our last read or write saw it (the afterTurn policy; X2's replacement checks it). */
  #lastCount = 0;
  /** Its lastSeq as that answer showed it (undefined when the count came from elsewhere): the receipt's version. */
  #lastSeq: number | undefined;
  /** Ownership receipts this object handed out (SPEC X2): [live session, item count, lastSeq] as read; a stale one is dropped. */
  readonly #receipts = new WeakMap<object, Receipt>();
  /** The receipt of the addItemsWithCompactionOwnership call under way, read synchronously by addItems. */
  #owning: object | null | undefined;
  /** Settles when the last queued operation has; every public operation waits for it (see #serial). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(opts: LineageSessionOptions) {
    const id = opts.sessionId;
    if (id !== undefined && !CONVERSATION_ID.test(id))
      throw new TypeError(
        `LineageSession: sessionId ${JSON.stringify(id.slice(0, 140))} is not a conversation id (1-128 characters of letters, digits and "._:@-", not "." or "..")`,
      );
    this.#client = opts.client;
    this.#opts = opts;
    this.#id = id;
  }

  /** The conversation id, without a request (undefined until chosen: no sessionId was given and nothing was called yet). */
  get conversationId(): string | undefined {
    return this.#id;
  }

  /** The session the service's last answer named as live (it changes with rotations), without a request; undefined before first use and after a clear. */
  get liveSessionId(): string | undefined {
    return this.#live;
  }

  /** The conversation id: the same for the object's whole life, across rotations, in-place compactions and clears. Creates the conversation on first use. */
  getSessionId(): Promise<string> {
    return this.#serial(() => this.#ensure());
  }

  /**
   * All items (limit unset: paged through nextCursor) or the latest `limit` (GET ?tail=), in
   * order, from the live session (the service finds it).
   */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && limit <= 0) return [];
    return this.#serial(() => this.#getItems(limit));
  }

  async #getItems(limit: number | undefined): Promise<AgentInputItem[]> {
    const id = await this.#ensure();
    let items: Item[];
    if (limit === undefined) items = await this.#readAll(id);
    else if (limit > MAX_TAIL) items = (await this.#readAll(id)).slice(-limit);
    else {
      const page = await this.#client.listConversationMessages(id, { tail: limit });
      this.#saw(page.session);
      // A tail the service shortened to fit one response: page through instead.
      items = page.truncated ? (await this.#readAll(id)).slice(-limit) : page.messages;
    }
    // Cast: AgentInputItem and the document's Item describe the same JSON with different types.
    return decodeBinary(items) as AgentInputItem[];
  }

  async #readAll(id: string): Promise<Item[]> {
    const { items, session } = await this.#client.readConversation(id);
    this.#saw(session, items.length);
    return items;
  }

  /**
   * The SDK's ownership-aware read (SPEC X2): all items, and a receipt (an opaque object) naming the
   * live session and its item count as read. It binds runCompaction to this read, with no request of its own.
   */
  getItemsWithCompactionOwnership(): Promise<{ items: AgentInputItem[]; ownership: object }> {
    return this.#serial(async () => {
      const items = await this.#getItems(undefined);
      const ownership = {};
      this.#receipts.set(ownership, [this.#live!, this.#lastCount, this.#lastSeq]);
      return { items, ownership };
    });
  }

  /**
   * addItems with a receipt (SPEC X2): the items always land, through addItems (a subclass's
   * override included). The receipt goes on covering the history only when the service's answer
   * shows our append directly after what it read (same session, count + appended); a write by
   * anyone else since makes it stale for good.
   */
  addItemsWithCompactionOwnership(items: AgentInputItem[], ownership: object | null): Promise<void> {
    this.#owning = ownership;
    try {
      return this.addItems(items);
    } finally {
      this.#owning = undefined;
    }
  }

  /**
   * One idempotent append, whatever the item count (the service's appends are atomic, A7); only
   * items whose JSON passes the 5 MB body limit go in more than one, in order. Each append lands
   * whole or not at all, once, on the live session, whatever rotations happen meanwhile (K2). If
   * the process dies between two of them, the conversation holds the first whole and nothing of
   * the rest. Items JSON cannot return as they are (binary, Map, Date, ...) are refused with
   * UnsupportedValueError before anything is sent.
   */
  async addItems(items: AgentInputItem[]): Promise<void> {
    const ownership = this.#owning;
    const all = encodeBinary(items, 'items') as Item[];
    assertJsonValue(all, 'items');
    if (items.length === 0) return;
    return this.#serial(async () => {
      const id = await this.#ensure();
      for (const chunk of chunks(all)) {
        const r = await this.#client.appendToConversation(id, chunk);
        const n = r.session.messageCount;
        const own = ownership && this.#receipts.get(ownership);
        const seq = r.session.lastSeq;
        // Ours directly after what it read: the count and (when known) the last seq moved by exactly our items.
        if (own && own[0] === r.sessionId && own[1] + r.appended === n && (own[2] ?? seq - r.appended) + r.appended === seq && !r.replayed)
          own.splice(1, 2, n, seq);
        else if (ownership) this.#receipts.delete(ownership);
        this.#saw(r.session);
        this.#opts.onEvent?.({
          type: 'appended',
          sessionId: r.sessionId,
          count: r.appended,
          messageCount: n,
          replayed: r.replayed,
          idempotencyKey: r.idempotencyKey,
        });
      }
    });
  }

  /**
   * The SDK's atomic, idempotent history change (SPEC X1): `append_items`, or `replace_suffix`
   * (the live session's last items, compared by value, replaced in one conditional write). The
   * operation id is recorded with the change in the same write, scoped to the conversation, so a
   * retry from any process (a RunState resumed elsewhere) is a no-op, even after later appends; the
   * same id with another transaction, or a suffix that no longer matches, throws and changes
   * nothing. Arguments are read once and checked by the SDK's rules before anything is sent.
   */
  async applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void> {
    // async: a refusal is a rejection, as the SDK's callers await it.
    const { operationId, transaction } = snapshotTransactionArgs(args);
    const encoded = encodeBinary(transaction, 'transaction') as HistoryTransaction;
    assertJsonValue(encoded, 'transaction');
    await this.#serial(() => this.#applyTransaction(operationId, encoded));
  }

  async #applyTransaction(operationId: string, transaction: HistoryTransaction): Promise<void> {
    const id = await this.#ensure();
    try {
      const r = await this.#client.applyConversationTransaction(id, {
        operationId,
        transaction: transaction as Parameters<LineageClient['applyConversationTransaction']>[1]['transaction'],
      });
      this.#saw(r.session);
    } catch (err) {
      if (err instanceof ConflictError && err.code === 'suffix_mismatch')
        throw new HistoryTransactionError('Session history suffix no longer matches the transaction precondition.', { cause: err });
      if (err instanceof IdempotencyKeyReusedError)
        throw new HistoryTransactionError('Session history operation was already applied with a different transaction.', { cause: err });
      if (err instanceof BadRequestError) throw new HistoryTransactionError(INVALID_ITEMS, { cause: err });
      throw err;
    }
  }

  /**
   * The SDK's history rewrite: `replace_function_call` puts `replacement` where the first
   * function_call with `callId` is and drops its duplicates (as MemorySession does), atomically:
   * one replace_suffix from that call to the end, conditioned on that suffix being what was read,
   * so a write from another process in between fails it instead of being overwritten. Throws a
   * ConflictError (409 `suffix_mismatch`, or `conflict` when no call has that id) and changes nothing.
   */
  applyHistoryMutations(args: SessionHistoryRewriteArgs): Promise<void> {
    if (args.mutations.length === 0) return Promise.resolve();
    const mutations = args.mutations.map((m) => ({ ...m, replacement: structuredClone(m.replacement) }));
    return this.#serial(async () => {
      const items = (await this.#getItems(undefined)) as unknown[];
      let next = items;
      for (const m of mutations) {
        const at = next.findIndex((it) => isCall(it, m.callId));
        if (at < 0)
          throw new ConflictError(
            409,
            { error: { code: 'conflict', message: `no function_call with callId ${JSON.stringify(m.callId)} in the history` } },
            new Headers(),
          );
        next = [...next.slice(0, at), m.replacement, ...next.slice(at + 1).filter((it) => !isCall(it, m.callId))];
      }
      let from = 0;
      while (from < items.length && from < next.length && JSON.stringify(items[from]) === JSON.stringify(next[from])) from++;
      const transaction = encodeBinary(
        { type: 'replace_suffix', expectedSuffix: items.slice(from), replacement: next.slice(from) },
        'mutations',
      ) as HistoryTransaction;
      await this.#applyTransaction(globalThis.crypto.randomUUID(), transaction).catch((err: unknown) => {
        throw err instanceof HistoryTransactionError && err.cause instanceof ConflictError ? err.cause : err;
      });
    });
  }

  /** Removes the conversation's last item (DELETE .../messages/last on the live session). */
  popItem(): Promise<AgentInputItem | undefined> {
    return this.#serial(async () => {
      const { removed, session } = await this.#client.popConversation(await this.#ensure());
      this.#saw(session);
      return decodeBinary(removed ?? undefined) as AgentInputItem | undefined;
    });
  }

  /**
   * Forgets the conversation: deletes it, every session of its chain (K3), and the next call
   * creates it again, empty, under the same id. Another process still holding it gets
   * NotFoundError until something creates it again.
   *
   * Waits for the operations called before it, and the ones called after it wait for it. The
   * conversation counts as existing until the delete is confirmed: if it fails, this rejects and
   * calling clearSession again repeats the delete.
   */
  clearSession(): Promise<void> {
    return this.#serial(async () => {
      const id = this.#id;
      if (id === undefined) return; // nothing chosen, nothing created
      try {
        await this.#client.deleteConversation(id);
      } catch (err) {
        // Already gone (another process cleared it, or it was never created): done all the same.
        if (!(err instanceof NotFoundError)) throw err;
      }
      this.#ensured = false;
      this.#live = undefined;
      [this.#lastCount, this.#lastSeq] = [0, undefined];
      this.#opts.onEvent?.({ type: 'cleared', conversationId: id });
    });
  }

  /**
   * Holds the conversation for `fn` with a turn (SPEC T1-T6; client.withTurn): every write this
   * session makes meanwhile carries the turn's token. `session.runTurn(() => run(agent, input, {session}))`:
   * with `reject`, a second process's runTurn throws ConversationBusyError before its model is called.
   */
  async runTurn<T>(fn: (turn: HeldTurn) => Promise<T>, req?: BeginTurnRequest): Promise<T> {
    const own = this.#client;
    return own.withTurn(
      await this.getSessionId(),
      async (client, turn) => {
        this.#client = client;
        try {
          return await fn(turn);
        } finally {
          this.#client = own;
        }
      },
      req,
    );
  }

  /**
   * Asks the service to compact the conversation's live session. A rotation (ours, or one
   * another process made first, answered `skipped`/`adopted`) moves liveSessionId to the child;
   * the conversation id stays. `skipped`/`locked` means another compaction is running; nothing is retried.
   */
  compact(opts: CompactOptions = {}): Promise<CompactWithResult> {
    return this.#serial(() => this.#compact(opts));
  }

  async #compact(opts: CompactOptions, receipt?: Receipt): Promise<CompactWithResult> {
    const { engine, ...policy } = this.#opts.compaction ?? {};
    const id = await this.#ensure();
    const keepLast = opts.keepLast ?? policy.keepLast;
    const req = { mode: opts.mode ?? policy.mode ?? 'in_place', origin: opts.origin ?? 'manual' } as const;
    // The engine sees the items as stored (JSON: binary as {$bytes}), so what it keeps goes back as it was.
    // X2: a receipt goes with the first begin, which the service refuses (skipped/stale) unless the history is as read.
    const once = (e?: Receipt) =>
      engine
        ? this.#client.compactWith(id, engine, e ? { ...req, expectedSessionId: e[0], expectedCount: e[1], ...seqOf(e[2]) } : req)
        : this.#client.compressConversation(id, { ...req, ...(keepLast !== undefined ? { keepLast } : {}) });
    let response = await once(receipt);
    this.#opts.onEvent?.({ type: 'compacted', response });
    // SPEC P6: a long session is compacted one bounded part per request (`partial`); go on until it is done.
    while (response.outcome === 'compressed' && response.partial === true) {
      response = await once();
      this.#opts.onEvent?.({ type: 'compacted', response });
    }
    this.#moveTo(response.sessionId, 'compaction');
    return response;
  }

  /**
   * The SDK's replaceHistoryWithCompaction (SPEC X2): `items` (a compaction item and the suffix it
   * keeps) replace the history in place under the service's lease and fence, through a held
   * attempt whose begin checks that the live session is the one this object last read or wrote,
   * holding as many items (else it throws and nothing is written), and whose commit writes `items`
   * verbatim. Items another process appends meanwhile are kept after them (I4). The conversation
   * id stays; nothing is deleted, clearSession is never called.
   */
  replaceHistoryWithCompaction(items: AgentInputItem[]): Promise<void> {
    const all = encodeBinary(items, 'items') as Item[];
    assertJsonValue(all, 'items');
    return this.#serial(async () => {
      const id = await this.#ensure();
      const n = this.#lastCount;
      const r = await this.#client.compactWith(id, ({ attempt }) => (attempt.partial ? [] : all), {
        expectedSessionId: this.#live!,
        expectedCount: n,
        ...seqOf(this.#lastSeq),
        verbatim: true,
      });
      // An empty history has nothing to compact: the items are its first, at position 0 only (A4).
      if (r.reason === 'nothing_to_compact' && !n)
        this.#saw((await this.#client.appendToConversation(id, all, { expectedCount: 0 })).session);
      else if (r.outcome !== 'compressed' && r.reason !== 'unchanged')
        throw new LineageError(`replaceHistoryWithCompaction: nothing was replaced (${r.outcome} ${r.reason})`);
      else [this.#lastCount, this.#lastSeq] = [all.length, undefined];
    });
  }

  /**
   * The SDK's post-turn hook (OpenAIResponsesCompactionAwareSession). Compacts through the
   * service when forced or when the policy's threshold is passed. Always answers null: the
   * service's compaction is not a model request of this run, so it adds nothing to the run's
   * usage. responseId / compactionMode / store describe OpenAI's responses.compact and do not
   * apply here.
   *
   * Never rejects: the SDK awaits this hook after the turn was saved, so a rejection would fail a
   * run whose work is done. A failure (the service down, the conversation gone) is reported as a
   * `compaction_failed` event (a console.warn when there is no onEvent) and the run goes on; the
   * service's after-turn consumer compacts by size anyway.
   */
  runCompaction(
    args?: OpenAIResponsesCompactionArgs,
    _runContext?: unknown,
    ownership?: object | null,
  ): Promise<OpenAIResponsesCompactionResult | null> {
    return this.#serial(async () => {
      const threshold = this.#opts.compaction?.afterTurnAboveItems;
      // X2: undefined is a manual compaction; null, a foreign or a stale receipt authorizes none.
      const receipt = ownership && this.#receipts.get(ownership);
      const due = args?.force === true || (threshold !== undefined && (receipt?.[1] ?? this.#lastCount) > threshold);
      if (!due || (ownership !== undefined && !receipt)) return null;
      try {
        await this.#compact({ origin: 'turn' }, receipt ?? undefined);
      } catch (error) {
        const event = { type: 'compaction_failed' as const, conversationId: this.#id, sessionId: this.#live, error };
        if (this.#opts.onEvent) this.#opts.onEvent(event);
        else console.warn(`LineageSession: compaction after the turn failed (the run goes on): ${String(error)}`);
      }
      return null;
    });
  }

  /**
   * Runs `op` after every operation called before it has settled (fulfilled or not), so the
   * operations on one object take effect in call order and clearSession never races them.
   */
  #serial<T>(op: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(op);
    this.#queue = result.catch(() => undefined);
    return result;
  }

  /**
   * The one place the conversation is made sure of: one PUT (creates it or returns it) on first
   * use and on the first use after a clear; never again otherwise, so a conversation another
   * process deleted answers NotFoundError instead of coming back empty. Only ever called inside
   * #serial, so one PUT happens however many calls race for it; a failed one is repeated by the
   * next call (a PUT is safe to repeat).
   */
  async #ensure(): Promise<string> {
    const id = (this.#id ??= globalThis.crypto.randomUUID());
    if (this.#ensured) return id;
    const { source, metadata } = this.#opts;
    let put: Awaited<ReturnType<LineageClient['putConversation']>>;
    try {
      put = await this.#client.putConversation(id, {
        format: 'responses',
        ...(source !== undefined ? { source } : {}),
        ...(metadata !== undefined ? { metadata } : {}),
      });
    } catch (err) {
      if (err instanceof ConflictError && err.code === 'format_mismatch')
        throw new LineageError(`LineageSession needs a conversation of "responses" items (the Agents SDK's): ${err.message}`, {
          cause: err,
        });
      throw err;
    }
    this.#ensured = true;
    this.#live = put.conversation.liveSessionId;
    if (put.created) this.#opts.onEvent?.({ type: 'created', conversationId: id, sessionId: put.conversation.liveSessionId });
    return id;
  }

  /** An answer named the session it acted on: a different one than we knew, with a parent, is a rotation's child. */
  #saw(s: Session, count = s.messageCount): void {
    this.#lastCount = count;
    this.#lastSeq = count === s.messageCount ? s.lastSeq : undefined;
    if (s.parentSessionId !== null) this.#moveTo(s.sessionId, 'rotation');
    else this.#live = s.sessionId;
  }

  #moveTo(to: string, via: 'compaction' | 'rotation'): void {
    const from = this.#live;
    this.#live = to;
    if (from !== undefined && from !== to) this.#opts.onEvent?.({ type: 'followed', from, to, via });
  }
}

/** SPEC X2: an ownership receipt: the live session, its item count and its lastSeq (when known) as read. */
type Receipt = [sessionId: string, count: number, lastSeq: number | undefined];
const seqOf = (lastSeq: number | undefined) => (lastSeq === undefined ? {} : { expectedLastSeq: lastSeq });

function isCall(item: unknown, callId: string): boolean {
  const it = item as { type?: unknown; callId?: unknown } | null;
  return it !== null && typeof it === 'object' && it.type === 'function_call' && it.callId === callId;
}
