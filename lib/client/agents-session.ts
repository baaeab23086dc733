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
import { isLive, type CompressMode, type CompressOrigin, type CompressResponse, type Item, type Session } from './types.js';

export type LineageSessionEvent =
  | { type: 'created'; sessionId: string }
  | { type: 'appended'; sessionId: string; count: number; messageCount: number; replayed: boolean; idempotencyKey: string }
  | { type: 'followed'; from: string; to: string; via: 'session_ended' | 'lineage' | 'compaction' }
  | { type: 'compacted'; response: CompressResponse }
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
  #creating: Promise<string> | undefined;
  /** The live session's item count after our last append (for the afterTurn policy). */
  #lastCount = 0;

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
  async getSessionId(): Promise<string> {
    const id = await this.#known();
    const session = await this.#client.getSession(id);
    return isLive(session) ? id : this.#followLineage(id);
  }

  /**
   * All items (limit unset: paged through nextCursor) or the latest `limit` (GET ?tail=), in
   * order, from the live session. Liveness comes with the read (each page carries its session);
   * only when the session turned out to be rotated is the read repeated on the live tip.
   */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && limit <= 0) return [];
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
   * One idempotent append per chunk of at most 98 items (and 1 MB), in order. Each chunk lands
   * whole or not at all, once, on the live session, following rotations. If the process dies
   * between chunks, the session holds the first chunks and nothing of the rest.
   */
  async addItems(items: AgentInputItem[]): Promise<void> {
    // Cast: AgentInputItem and the document's Item describe the same JSON with different types.
    for (const chunk of chunks(items)) await this.#appendChunk(chunk);
  }

  /** Removes the conversation's last item (DELETE .../messages/last on the live session). */
  async popItem(): Promise<AgentInputItem | undefined> {
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
  }

  /**
   * Forgets the conversation: deletes every session of its chain (the live one first, so no
   * writer can go on appending to it; the ended ancestors hold its earlier items) and starts
   * afresh, so the next call creates a new empty session. Another process still holding this
   * conversation gets NotFoundError from then on.
   */
  async clearSession(): Promise<void> {
    const id = this.#id ?? (await this.#creating?.catch(() => undefined));
    this.#id = undefined;
    this.#creating = undefined;
    this.#checkedFormat = false;
    this.#lastCount = 0;
    if (id === undefined) return;
    const deleted = await deleteChain(this.#client, id);
    this.#opts.onEvent?.({ type: 'cleared', deleted });
  }

  /**
   * Asks the service to compact the live session and follows the result: a rotation (ours, or
   * one another process made first, answered `skipped`/`adopted`) moves this session to the
   * child. `skipped`/`locked` means another compaction is running; nothing is retried.
   */
  async compact(opts: CompactOptions = {}): Promise<CompressResponse> {
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
   */
  async runCompaction(args?: OpenAIResponsesCompactionArgs): Promise<OpenAIResponsesCompactionResult | null> {
    const threshold = this.#opts.compaction?.afterTurnAboveItems;
    const due = args?.force === true || (threshold !== undefined && this.#lastCount > threshold);
    if (due) await this.compact({ origin: 'turn' });
    return null;
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

  /** The id to use: the one known, or a new session (created once however many calls race for it). */
  async #known(): Promise<string> {
    if (this.#id !== undefined) {
      if (!this.#checkedFormat) await this.#checkFormat(this.#id);
      return this.#id;
    }
    this.#creating ??= this.#client
      .createSession({
        format: 'responses',
        ...(this.#opts.source !== undefined ? { source: this.#opts.source } : {}),
        ...(this.#opts.metadata !== undefined ? { metadata: this.#opts.metadata } : {}),
      })
      .then((s) => {
        this.#id = s.sessionId;
        this.#checkedFormat = true;
        this.#opts.onEvent?.({ type: 'created', sessionId: s.sessionId });
        return s.sessionId;
      })
      .finally(() => {
        this.#creating = undefined;
      });
    return this.#creating;
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
