// An OpenAI Agents SDK session (@openai/agents-core 0.20 `Session`, plus its compaction hook)
// kept by the session-lineage service. Unlike the SDK's own stores it stays correct with many
// writers on one conversation: another process may compact it (rotating it to a child, or in
// place) at any time, and this session follows the chain to the live tip.
//
// Only types are imported from the SDK, so bundling this module adds none of its code.
import type {
  AgentInputItem,
  OpenAIResponsesCompactionArgs,
  OpenAIResponsesCompactionAwareSession,
  OpenAIResponsesCompactionResult,
} from '@openai/agents-core';
import type { LineageClient } from './client.js';
import { deleteChain } from './chain.js';
import { chunks, MAX_TAIL } from './chunks.js';
import { LineageError, SessionEndedError } from './errors.js';
import { assertJsonValue } from './json-values.js';
import { isLive, type CompressMode, type CompressOrigin, type CompressResponse, type Item, type Session } from './types.js';

export type LineageSessionEvent =
  | { type: 'created'; sessionId: string }
  | { type: 'appended'; sessionId: string; count: number; messageCount: number; replayed: boolean; idempotencyKey: string }
  | { type: 'followed'; from: string; to: string; via: 'session_ended' | 'lineage' | 'compaction' }
  | { type: 'compacted'; response: CompressResponse }
  /** runCompaction (the SDK's best-effort post-turn hook) failed; the run goes on. Without onEvent this is a console.warn. */
  | { type: 'compaction_failed'; sessionId: string | undefined; error: unknown }
  | { type: 'cleared'; deleted: string[] };

export interface LineageCompactionPolicy {
  /** Mode of `runCompaction` and of `compact()` without one; default in_place. */
  mode?: CompressMode;
  keepLast?: number;
  /**
   * The SDK calls runCompaction after every turn it persists. Compact then only when the live
   * session holds more than this many items (unset: only when the runner passes `force`; the
   * service's own after-turn consumer compacts by size anyway, SPEC F3).
   */
  afterTurnAboveItems?: number;
}

export interface LineageSessionOptions {
  client: LineageClient;
  /** Continue this conversation: any session id of its chain (the live tip is found). Unset: one is created on first use. */
  sessionId?: string;
  /** For the session this creates (first use, and after clearSession). */
  source?: string;
  metadata?: Record<string, unknown>;
  compaction?: LineageCompactionPolicy;
  /** Rotations followed within one call before giving up (each hop is a compaction that happened meanwhile). */
  maxFollows?: number;
  onEvent?: (event: LineageSessionEvent) => void;
}

export interface CompactOptions {
  mode?: CompressMode;
  keepLast?: number;
  origin?: CompressOrigin;
}

export class LineageSession implements OpenAIResponsesCompactionAwareSession {
  readonly #client: LineageClient;
  readonly #opts: LineageSessionOptions;
  readonly #maxFollows: number;
  #id: string | undefined;
  #checkedFormat = false;
  /** The live session's item count after our last append (for the afterTurn policy). */
  #lastCount = 0;
  /** Settles when the last queued operation has; every public operation waits for it (see #serial). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(opts: LineageSessionOptions) {
    this.#client = opts.client;
    this.#opts = opts;
    this.#id = opts.sessionId;
    this.#maxFollows = opts.maxFollows ?? 8;
  }

  /** The session id this object last knew to be live, without asking the service (undefined before first use). */
  get currentSessionId(): string | undefined {
    return this.#id;
  }

  /** The live session of the conversation: asks the service, and follows the chain when another process rotated it. */
  getSessionId(): Promise<string> {
    return this.#serial(async () => {
      const id = await this.#known();
      const session = await this.#client.getSession(id);
      return isLive(session) ? id : this.#followLineage(id);
    });
  }

  /**
   * All items (limit unset: paged through nextCursor) or the latest `limit` (GET ?tail=), in
   * order, from the live session. Liveness comes with the read (each page carries its session);
   * only when the session turned out to be rotated is the read repeated on the live tip.
   */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && limit <= 0) return [];
    return this.#serial(() => this.#getItems(limit));
  }

  async #getItems(limit: number | undefined): Promise<AgentInputItem[]> {
    let id = await this.#known();
    for (let hop = 0; ; hop++) {
      const { items, session } = await this.#read(id, limit);
      // An ended session with no successor is the conversation's last: its transcript is the answer.
      const tip = isLive(session) ? id : await this.#followLineage(id);
      if (tip === id) {
        // A tail the service shortened to fit one response: page through instead.
        const short = limit !== undefined && limit <= MAX_TAIL && items.length < limit && session.messageCount > items.length;
        return (short ? (await this.#client.readAll(id)).slice(-limit) : items) as AgentInputItem[];
      }
      if (hop >= this.#maxFollows) throw new LineageError(`session ${id}: still rotating after ${hop + 1} hops`);
      id = tip;
    }
  }

  /**
   * One idempotent append, whatever the item count (the service's appends are atomic, A7); only
   * items whose JSON passes the 5 MB body limit go in more than one, in order. Each append lands
   * whole or not at all, once, on the live session, following rotations. If the process dies
   * between two of them, the session holds the first whole and nothing of the rest. Items JSON cannot
   * return as they are (binary, Map, Date, ...) are refused with UnsupportedValueError before
   * anything is sent.
   */
  async addItems(items: AgentInputItem[]): Promise<void> {
    assertJsonValue(items, 'items');
    if (items.length === 0) return;
    // Cast: AgentInputItem and the document's Item describe the same JSON with different types.
    const all = items as unknown as Item[];
    return this.#serial(async () => {
      for (const chunk of chunks(all)) await this.#appendChunk(chunk);
    });
  }

  /** Removes the conversation's last item (DELETE .../messages/last on the live session). */
  popItem(): Promise<AgentInputItem | undefined> {
    return this.#serial(async () => {
      let id = await this.#known();
      for (let hop = 0; ; hop++) {
        try {
          const { removed } = await this.#client.pop(id);
          return (removed ?? undefined) as AgentInputItem | undefined;
        } catch (err) {
          const live = err instanceof SessionEndedError ? err.liveSessionId : null;
          if (live === null || hop >= this.#maxFollows) throw err;
          id = this.#moveTo(id, live, 'session_ended');
        }
      }
    });
  }

  /**
   * Forgets the conversation: deletes every session of its chain (the live one first, so no
   * writer can go on appending to it; the ended ancestors hold its earlier items) and starts
   * afresh, so the next call creates a new empty session. Another process still holding this
   * conversation gets NotFoundError from then on.
   *
   * Waits for the operations called before it, and the ones called after it wait for it. The id
   * is forgotten only once the whole chain is deleted: if a delete fails, this rejects, the
   * session still names the conversation, and calling clearSession again repeats the delete.
   */
  clearSession(): Promise<void> {
    return this.#serial(async () => {
      const id = this.#id;
      if (id !== undefined) {
        const deleted = await deleteChain(this.#client, id);
        this.#opts.onEvent?.({ type: 'cleared', deleted });
      }
      this.#id = undefined;
      this.#checkedFormat = false;
      this.#lastCount = 0;
    });
  }

  /**
   * Asks the service to compact the live session and follows the result: a rotation (ours, or
   * one another process made first, answered `skipped`/`adopted`) moves this session to the
   * child. `skipped`/`locked` means another compaction is running; nothing is retried.
   */
  compact(opts: CompactOptions = {}): Promise<CompressResponse> {
    return this.#serial(() => this.#compact(opts));
  }

  async #compact(opts: CompactOptions): Promise<CompressResponse> {
    const policy = this.#opts.compaction ?? {};
    const id = await this.#known();
    const keepLast = opts.keepLast ?? policy.keepLast;
    const response = await this.#client.compress(id, {
      mode: opts.mode ?? policy.mode ?? 'in_place',
      origin: opts.origin ?? 'manual',
      ...(keepLast !== undefined ? { keepLast } : {}),
    });
    this.#opts.onEvent?.({ type: 'compacted', response });
    if (response.sessionId !== id) this.#moveTo(id, response.sessionId, 'compaction');
    return response;
  }

  /**
   * The SDK's post-turn hook (OpenAIResponsesCompactionAwareSession). Compacts through the
   * service when forced or when the policy's threshold is passed. Always answers null: the
   * service's compaction is not a model request of this run, so it adds nothing to the run's
   * usage. responseId / compactionMode / store describe OpenAI's responses.compact and do not
   * apply here.
   *
   * Never rejects: the SDK awaits this hook after the turn was saved, so a rejection would fail a
   * run whose work is done. A failure (the service down, the session gone) is reported as a
   * `compaction_failed` event (a console.warn when there is no onEvent) and the run goes on; the
   * service's after-turn consumer compacts by size anyway.
   */
  runCompaction(args?: OpenAIResponsesCompactionArgs): Promise<OpenAIResponsesCompactionResult | null> {
    return this.#serial(async () => {
      const threshold = this.#opts.compaction?.afterTurnAboveItems;
      const due = args?.force === true || (threshold !== undefined && this.#lastCount > threshold);
      if (!due) return null;
      try {
        await this.#compact({ origin: 'turn' });
      } catch (error) {
        const event = { type: 'compaction_failed' as const, sessionId: this.#id, error };
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

  async #appendChunk(chunk: Item[]): Promise<void> {
    let id = await this.#known();
    for (let hop = 0; ; hop++) {
      try {
        // followRotation re-targets once; the key stays the chunk's across hops (keys are per session).
        const r = await this.#client.append(id, chunk, { followRotation: true });
        if (r.followedFrom !== undefined) this.#moveTo(r.followedFrom, r.sessionId, 'session_ended');
        this.#lastCount = r.session.messageCount;
        this.#opts.onEvent?.({
          type: 'appended',
          sessionId: r.sessionId,
          count: r.appended,
          messageCount: r.session.messageCount,
          replayed: r.replayed,
          idempotencyKey: r.idempotencyKey,
        });
        return;
      } catch (err) {
        // The live session rotated again before the re-targeted append arrived.
        const live = err instanceof SessionEndedError ? err.liveSessionId : null;
        if (live === null || hop >= this.#maxFollows) throw err;
        id = this.#moveTo(id, live, 'session_ended');
      }
    }
  }

  async #read(id: string, limit: number | undefined): Promise<{ items: Item[]; session: Session }> {
    if (limit === undefined || limit > MAX_TAIL) {
      const { items, session } = await this.#client.readTranscript(id);
      return { items: limit === undefined ? items : items.slice(-limit), session };
    }
    const page = await this.#client.listMessages(id, { tail: limit });
    return { items: page.messages, session: page.session };
  }

  /**
   * The one place the session id is resolved: the one known, or a new session. Only ever called
   * inside #serial, so one create happens however many calls race for it, and a failed create
   * leaves nothing behind (the next call tries again).
   */
  async #known(): Promise<string> {
    if (this.#id !== undefined) {
      if (!this.#checkedFormat) await this.#checkFormat(this.#id);
      return this.#id;
    }
    const s = await this.#client.createSession({
      format: 'responses',
      ...(this.#opts.source !== undefined ? { source: this.#opts.source } : {}),
      ...(this.#opts.metadata !== undefined ? { metadata: this.#opts.metadata } : {}),
    });
    this.#id = s.sessionId;
    this.#checkedFormat = true;
    this.#opts.onEvent?.({ type: 'created', sessionId: s.sessionId });
    return s.sessionId;
  }

  /** A session handed in by id must hold Agents SDK items (SPEC A1: the format is fixed at creation). */
  async #checkFormat(id: string): Promise<void> {
    const s: Session = await this.#client.getSession(id);
    if (s.format !== 'responses')
      throw new LineageError(`session ${id} holds "${s.format}" items; LineageSession needs a "responses" session`);
    this.#checkedFormat = true;
  }

  async #followLineage(id: string): Promise<string> {
    const { chain, tip } = await this.#client.lineage(id);
    if (tip === null) throw new LineageError(`the live session of ${id}'s conversation (${chain.at(-1)?.sessionId}) was deleted`);
    return this.#moveTo(id, tip, 'lineage');
  }

  #moveTo(from: string, to: string, via: 'session_ended' | 'lineage' | 'compaction'): string {
    // Only move forward from what we hold: a stale answer about an older session must not move us back.
    if (this.#id === from || this.#id === undefined) this.#id = to;
    if (from !== to) this.#opts.onEvent?.({ type: 'followed', from, to, via });
    return to;
  }
}
