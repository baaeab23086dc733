// Typed client for the whole HTTP API (functions/openapi.json). Paths, parameters and bodies
// are typed by openapi-fetch from the generated openapi-types.ts; transport.ts adds timeouts,
// retries and typed errors. Needs nothing but `fetch` (Node 20+, Lambda).
import type { Client } from 'openapi-fetch';
import createClient from './fetch-client.js';
import { CursorStaleError, LineageError, NotFoundError, SessionEndedError } from './errors.js';
import { compactHeld, keepAlive, type CompactionEngine, type CompactWithOptions, type CompactWithResult, type HeldCall } from './held.js';
import { assertJsonValue } from './json-values.js';
import type { paths } from './openapi-types.js';
import { resolvePolicy, type RetryPolicy, type Safety } from './retry.js';
import { send, type FetchResult } from './transport.js';
import type {
  CompressRequest,
  CompressResponse,
  CreateSessionRequest,
  BeginTurnRequest,
  GrantedTurn,
  HistoryTransactionRequest,
  HistoryTransactionResponse,
  Item,
  Conversation,
  ConversationsPage,
  HistoryPage,
  ImportResult,
  Lineage,
  MessagesPage,
  PutConversationRequest,
  PopResponse,
  Session,
} from './types.js';

export interface LineageClientOptions {
  /** The stage's URL, e.g. https://abc123.execute-api.eu-west-1.amazonaws.com or http://127.0.0.1:3000. */
  baseUrl: string;
  /** An API key (`npm run cli -- keys create --tenant <name>`); sent as a Bearer token. */
  apiKey: string;
  /** A fetch to use instead of globalThis.fetch (a proxy agent, instrumentation, tests). */
  fetch?: (request: Request) => Promise<Response>;
  /** Per attempt; default 30 s (API Gateway's own limit). */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Headers sent with every request (withTurn's client sends its turn's Turn-Token this way). */
  headers?: Record<string, string>;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Overrides the client's per-attempt timeout for this call. */
  timeoutMs?: number;
}

export interface CreateSessionOptions extends CallOptions {
  /** Defaults to a fresh random key: a retried create makes one session (SPEC A3). */
  idempotencyKey?: string;
}

export interface AppendOptions extends CallOptions {
  /** Defaults to a fresh random key, reused by every retry of this append. */
  idempotencyKey?: string;
  /** Land only at this position, else CountMismatchError (SPEC A4). Never combined with followRotation. */
  expectedCount?: number;
  /** On 409 session_ended, append to the live session the error names instead, once. */
  followRotation?: boolean;
}

export interface AppendResult {
  /** Where the items landed (differs from the id asked for when followRotation re-targeted). */
  sessionId: string;
  session: Session;
  appended: number;
  /** The service answered with the stored first response to this key: the items landed earlier, once. */
  replayed: boolean;
  idempotencyKey: string;
  /** The ended session the append was first sent to, when followRotation re-targeted it. */
  followedFrom?: string;
}

export interface PageOptions {
  /** Items per page, 1-1000 (the service's default is 500; pages are also capped by size). */
  limit?: number;
}

export interface ConversationAppendOptions extends CallOptions {
  /** Defaults to a fresh random key, reused by every retry; scoped to the conversation, so it holds across rotations. */
  idempotencyKey?: string;
  /** Land only if the live session holds exactly this many items (SPEC A4). */
  expectedCount?: number;
}

export const DEFAULT_TIMEOUT_MS = 30_000;

/** A key no other request will use: 122 random bits. */
export function newIdempotencyKey(): string {
  return `lsc-${crypto.randomUUID()}`;
}

/** A turn held by withTurn: the grant, and a signal that aborts when its heartbeats find it lost (superseded, expired). */
export type HeldTurn = GrantedTurn & { signal: AbortSignal };

export class LineageClient {
  readonly #api: Client<paths>;
  readonly #policy: RetryPolicy;
  readonly #timeoutMs: number;
  readonly #opts: LineageClientOptions;

  constructor(opts: LineageClientOptions) {
    if (!opts.baseUrl) throw new TypeError('baseUrl is required');
    if (!opts.apiKey) throw new TypeError('apiKey is required');
    this.#policy = resolvePolicy(opts.retry);
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#opts = opts;
    this.#api = createClient<paths>({
      baseUrl: opts.baseUrl,
      headers: { ...opts.headers, authorization: `Bearer ${opts.apiKey}` },
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
    });
  }

  /** POST /sessions. */
  async createSession(req: CreateSessionRequest = {}, opts: CreateSessionOptions = {}): Promise<Session> {
    const key = opts.idempotencyKey ?? newIdempotencyKey();
    assertJsonValue(req, 'request');
    const body = JSON.stringify(req);
    const r = await keyed(key, () =>
      this.#send('repeatable', opts, (signal) =>
        this.#api.POST('/sessions', { params: { header: { 'Idempotency-Key': key } }, body: req, bodySerializer: () => body, signal }),
      ),
    );
    return r.data.session;
  }

  /** GET /sessions/{id}. */
  async getSession(id: string, opts: CallOptions = {}): Promise<Session> {
    return (await this.#call<{ session: Session }>('GET', sessionPath(id), opts)).session;
  }

  /**
   * DELETE /sessions/{id}. A 404 after an attempt that got no answer counts as done: that
   * attempt is what deleted it.
   */
  deleteSession(id: string, opts: CallOptions = {}): Promise<void> {
    return deleted(this.#call('DELETE', sessionPath(id), opts));
  }

  /**
   * POST /sessions/{id}/messages: any number of items (a body up to 5 MB), atomic and applied at most once. Items JSON
   * cannot return as they are (binary, Map, Date, ...) throw UnsupportedValueError before sending. Every
   * retry (network error, timeout, 5xx, 503 Retry-After) sends the same Idempotency-Key and the
   * same bytes, so the service replays the first answer instead of appending again (SPEC A3).
   */
  async append(id: string, items: readonly Item[], opts: AppendOptions = {}): Promise<AppendResult> {
    const key = opts.idempotencyKey ?? newIdempotencyKey();
    assertJsonValue(items, 'messages');
    const [request, body] = appendRequest(items, opts.expectedCount);
    const to = (target: string) =>
      this.#send('repeatable', opts, (signal) =>
        this.#api.POST('/sessions/{id}/messages', {
          params: { path: { id: target }, header: { 'Idempotency-Key': key } },
          body: request,
          bodySerializer: () => body,
          signal,
        }),
      );
    return keyed(key, async () => {
      let target = id;
      let followedFrom: string | undefined;
      for (;;) {
        try {
          const r = await to(target);
          return {
            sessionId: target,
            session: r.data.session,
            appended: r.data.appended,
            replayed: replayedOf(r),
            idempotencyKey: key,
            ...(followedFrom ? { followedFrom } : {}),
          };
        } catch (err) {
          // Keys are scoped to one session, so the same key is fresh on the live one; the 409 (checked
          // again after any unanswered attempt, see transport.ts) proves nothing landed here.
          const live = err instanceof SessionEndedError ? err.liveSessionId : null;
          if (!opts.followRotation || opts.expectedCount !== undefined || followedFrom !== undefined || live === null) throw err;
          followedFrom = target;
          target = live;
        }
      }
    });
  }

  /** GET /sessions/{id}/messages: one page in order; pass the previous page's nextCursor to go on. */
  listMessages(id: string, query: PageOptions & { cursor?: string; tail?: number } = {}, opts: CallOptions = {}): Promise<MessagesPage> {
    return this.#call('GET', `${sessionPath(id)}/messages`, { ...opts, query });
  }

  /**
   * The latest n items (1-1000) in chronological order. The service returns fewer than n when
   * they would not fit in one response (4.5 MB) and says so (`truncated` in listMessages(id, { tail: n }), which also returns the session).
   */
  async tail(id: string, n: number, opts: CallOptions = {}): Promise<Item[]> {
    return (await this.listMessages(id, { tail: n }, opts)).messages;
  }

  /** Every active item, page by page through nextCursor. Throws CursorStaleError if compacted in place meanwhile. */
  async *pages(id: string, page: PageOptions = {}, opts: CallOptions = {}): AsyncGenerator<Item[], void, undefined> {
    for await (const p of pagesOf((q) => this.listMessages(id, q, opts), page)) yield p.messages;
  }

  /** Every active item; starts over (up to maxRestarts times) when an in-place compaction makes the cursor stale. */
  async readAll(id: string, page: PageOptions & { maxRestarts?: number } = {}, opts: CallOptions = {}): Promise<Item[]> {
    return (await this.readTranscript(id, page, opts)).items;
  }

  /** readAll, with the session as the service read it with the last page (its liveness and count). */
  readTranscript(id: string, page: PageOptions & { maxRestarts?: number } = {}, opts: CallOptions = {}): Promise<Transcript> {
    return readWhole((q) => this.listMessages(id, q, opts), page);
  }

  /**
   * DELETE /sessions/{id}/messages/last: removes and returns the last item (null when empty).
   * Not retried once it may have reached the service: a repeat would remove a second item.
   */
  pop(id: string, opts: CallOptions = {}): Promise<PopResponse> {
    return this.#call('DELETE', `${sessionPath(id)}/messages/last`, { ...opts, safety: 'once' });
  }

  /** GET /sessions/{id}/lineage: the chain root → tip, from any member. */
  lineage(id: string, opts: CallOptions = {}): Promise<Lineage> {
    return this.#call('GET', `${sessionPath(id)}/lineage`, opts);
  }

  /**
   * POST /sessions/{id}/compress. A rotation is retried like a read (a repeat is adopted: it
   * answers skipped/adopted naming the one child); an in-place compaction only after the
   * service's own 503 (a repeat would compact twice).
   */
  compress(id: string, req: CompressRequest = {}, opts: CallOptions = {}): Promise<CompressResponse> {
    return this.#call('POST', `${sessionPath(id)}/compress`, { ...opts, body: req, safety: compressSafety(req) });
  }

  // Conversations (SPEC K1-K3): one id, chosen by the caller, for a whole chain. Every route acts
  // on the live session and follows rotations on the service side: no 409 session_ended to chase.

  /** PUT /conversations/{id}: creates it (`created: true`) or returns the existing one. Safe to repeat. */
  async putConversation(
    id: string,
    req: PutConversationRequest = {},
    opts: CallOptions = {},
  ): Promise<{ conversation: Conversation; created: boolean }> {
    const r = await this.#send('repeatable', opts, (signal) =>
      this.#api.PUT('/conversations/{conversationId}', { params: { path: { conversationId: id } }, body: req, signal }),
    );
    return { conversation: r.data.conversation, created: r.response.status === 201 };
  }

  /** GET /conversations/{id}. */
  async getConversation(id: string, opts: CallOptions = {}): Promise<Conversation> {
    return (await this.#call<{ conversation: Conversation }>('GET', conversationPath(id), opts)).conversation;
  }

  /** GET /conversations: most recently active first; pass nextCursor to go on. */
  listConversations(query: { limit?: number; cursor?: string } = {}, opts: CallOptions = {}): Promise<ConversationsPage> {
    return this.#call('GET', '/conversations', { ...opts, query });
  }

  /** GET /conversations/{id}/history (H1): every item it held, in order; a page may be short, follow nextCursor until null. */
  history(id: string, query: { limit?: number; cursor?: string } = {}, opts: CallOptions = {}): Promise<HistoryPage> {
    return this.#call('GET', `${conversationPath(id)}/history`, { ...opts, query });
  }

  /** GET /sessions/{id}/history (H1): the history of the session's conversation up to and including this session. */
  sessionHistory(id: string, query: { limit?: number; cursor?: string } = {}, opts: CallOptions = {}): Promise<HistoryPage> {
    return this.#call('GET', `${sessionPath(id)}/history`, { ...opts, query });
  }

  /** GET /conversations/{id}/export (H5), every page: JSON Lines, the conversation line then one line per history entry. */
  async exportConversation(id: string, opts: CallOptions & { limit?: number } = {}): Promise<string> {
    let out = '';
    for (let cursor: string | null | undefined; cursor !== null;) {
      const r = await this.#raw<string>('GET', `${conversationPath(id)}/export`, {
        ...opts,
        query: { limit: opts.limit, cursor },
        parseAs: 'text',
      });
      out += r.data;
      cursor = r.response.headers.get('x-next-cursor');
    }
    return out;
  }

  /** POST /conversations/{id}/import (H5): an export restored into the new conversation `id`; one key for every retry, so one import. */
  importConversation(id: string, ndjson: string, o: CreateSessionOptions = {}): Promise<ImportResult> {
    const headers = { 'idempotency-key': o.idempotencyKey ?? newIdempotencyKey(), 'content-type': 'application/x-ndjson' };
    return this.#call('POST', `${conversationPath(id)}/import`, { ...o, body: ndjson, headers, bodySerializer: String });
  }

  /** PATCH /conversations/{id}: replaces its metadata. */
  async updateConversation(id: string, metadata: Record<string, unknown>, opts: CallOptions = {}): Promise<Conversation> {
    return (await this.#call<{ conversation: Conversation }>('PATCH', conversationPath(id), { ...opts, body: { metadata } })).conversation;
  }

  /** DELETE /conversations/{id}: every session of the chain. A 404 after an unanswered attempt counts as done. */
  deleteConversation(id: string, opts: CallOptions = {}): Promise<void> {
    return deleted(this.#call('DELETE', conversationPath(id), opts));
  }

  /** POST /conversations/{id}/branches (H2): a new conversation holding the live items 1..fromSeq; one key for every retry, so one branch. */
  async branch(id: string, body: { conversationId: string; fromSeq?: number }, o: CreateSessionOptions = {}): Promise<Conversation> {
    const headers = { 'idempotency-key': o.idempotencyKey ?? newIdempotencyKey() };
    return (await this.#call<{ conversation: Conversation }>('POST', `${conversationPath(id)}/branches`, { ...o, body, headers }))
      .conversation;
  }

  /** POST /conversations/{id}/messages: appended to the live session, at most once across retries and rotations (K2, A3). */
  async appendToConversation(id: string, items: readonly Item[], opts: ConversationAppendOptions = {}): Promise<AppendResult> {
    const key = opts.idempotencyKey ?? newIdempotencyKey();
    const [request, body] = appendRequest(items, opts.expectedCount);
    return keyed(key, async () => {
      const r = await this.#send('repeatable', opts, (signal) =>
        this.#api.POST('/conversations/{conversationId}/messages', {
          params: { path: { conversationId: id }, header: { 'Idempotency-Key': key } },
          body: request,
          bodySerializer: () => body,
          signal,
        }),
      );
      return {
        sessionId: r.data.session.sessionId,
        session: r.data.session,
        appended: r.data.appended,
        replayed: replayedOf(r),
        idempotencyKey: key,
      };
    });
  }

  /**
   * POST /conversations/{id}/transactions (SPEC X1): an Agents SDK history transaction on the live
   * session, atomic, and at most once per operation id (the id is the request's key: retries,
   * here or in another process, replay the first answer).
   */
  async applyConversationTransaction(
    id: string,
    request: { operationId: string; transaction: HistoryTransactionRequest['transaction'] },
    opts: CallOptions = {},
  ): Promise<HistoryTransactionResponse & { replayed: boolean }> {
    const body = JSON.stringify(request);
    const r = await this.#send('repeatable', opts, (signal) =>
      this.#api.POST('/conversations/{conversationId}/transactions', {
        params: { path: { conversationId: id } },
        body: request,
        bodySerializer: () => body,
        signal,
      }),
    );
    return { ...r.data, replayed: replayedOf(r) };
  }

  /** GET /conversations/{id}/messages: a page (or the tail) of the live session; the page names it. */
  listConversationMessages(
    id: string,
    query: PageOptions & { cursor?: string; tail?: number } = {},
    opts: CallOptions = {},
  ): Promise<MessagesPage> {
    return this.#call('GET', `${conversationPath(id)}/messages`, { ...opts, query });
  }

  /** Every item of the live session; starts over when a compaction makes the cursor stale meanwhile. */
  readConversation(id: string, page: PageOptions & { maxRestarts?: number } = {}, opts: CallOptions = {}): Promise<Transcript> {
    return readWhole((q) => this.listConversationMessages(id, q, opts), page);
  }

  /** DELETE /conversations/{id}/messages/last. Not retried once it may have reached the service. */
  popConversation(id: string, opts: CallOptions = {}): Promise<PopResponse> {
    return this.#call('DELETE', `${conversationPath(id)}/messages/last`, { ...opts, safety: 'once' });
  }

  /** GET /conversations/{id}/lineage: the chain root → tip. */
  conversationLineage(id: string, opts: CallOptions = {}): Promise<Lineage> {
    return this.#call('GET', `${conversationPath(id)}/lineage`, opts);
  }

  /** POST /conversations/{id}/compress on the live session (retried like compress()). */
  compressConversation(id: string, req: CompressRequest = {}, opts: CallOptions = {}): Promise<CompressResponse> {
    return this.#call('POST', `${conversationPath(id)}/compress`, { ...opts, body: req, safety: compressSafety(req) });
  }

  /**
   * A held compaction (SPEC E1-E4) of the conversation's live session with your own engine: the
   * begin, heartbeats while `engine` runs, the fenced commit, or the abort when it did not commit
   * (held.ts; docs/held-compactions.md). A loser answers skipped/locked and never runs the engine.
   */
  compactWith(id: string, engine: CompactionEngine, opts: CompactWithOptions = {}): Promise<CompactWithResult> {
    // The conversation form of the routes: held.ts names the tails. The session form has the same shapes.
    const call: HeldCall = (tail, { token, ...req }, method = 'POST') =>
      this.#call(method, `${conversationPath(id)}/compactions${tail}`, { ...req, headers: { 'lease-token': token } });
    const readSnapshot = async (sessionId: string, n: number, signal: AbortSignal) => {
      const items: Item[] = [];
      for await (const page of this.pages(sessionId, {}, { signal })) if (items.push(...page) >= n) break;
      return items.slice(0, n);
    };
    return compactHeld(call, readSnapshot, this.#policy, engine, opts);
  }

  /**
   * A turn (SPEC T1-T6) holds the conversation for `fn`: begun (ConversationBusyError when another
   * holds it, or as `strategy` says), heartbeated while `fn` runs (L5; `turn.signal` aborts when it is
   * lost) and ended in `finally`. `fn`'s client sends the turn's token with every write, so a
   * superseded, ended or expired turn writes nothing (409 turn_superseded / turn_ended / turn_expired).
   */
  async withTurn<T>(id: string, fn: (client: LineageClient, turn: HeldTurn) => Promise<T>, req: BeginTurnRequest = {}): Promise<T> {
    const ttlMs = req.ttlMs ?? 300_000;
    const turn = await this.beginTurn(id, req);
    const lost = new AbortController();
    const stop = keepAlive({ ttlMs, heartbeatIntervalMs: Math.max(1000, Math.min(60_000, ttlMs / 2)) }, lost, (beat) =>
      this.heartbeatTurn(id, turn, ttlMs, beat),
    );
    try {
      return await fn(new LineageClient({ ...this.#opts, headers: { ...this.#opts.headers, 'turn-token': turn.turnToken } }), {
        ...turn,
        signal: lost.signal,
      });
    } finally {
      await stop();
      await this.endTurn(id, turn).catch(() => undefined); // else it expires at its TTL (T6)
    }
  }

  /** POST /conversations/{id}/turns. Not repeated once it may have reached the service (a repeat would meet the first as busy). */
  beginTurn(id: string, req: BeginTurnRequest = {}): Promise<GrantedTurn> {
    return this.#call<{ turn: GrantedTurn }>('POST', `${conversationPath(id)}/turns`, { body: req, safety: 'once' }).then((r) => r.turn);
  }

  /** Extends the turn to now + ttlMs; 409 when it is not current any more. */
  heartbeatTurn(id: string, turn: GrantedTurn, ttlMs?: number, beat?: number): Promise<unknown> {
    return this.#call('POST', `${turnPath(id, turn)}/heartbeat`, { body: { ttlMs }, headers: turnHeaders(turn), beat });
  }

  /** DELETE /conversations/{id}/turns/{turnId} (again: a no-op). */
  endTurn(id: string, turn: GrantedTurn): Promise<unknown> {
    return this.#call('DELETE', turnPath(id, turn), { headers: turnHeaders(turn) });
  }

  /**
   * A route by its path (the twins of the session and conversation routes share it, which keeps
   * the bundle inside its size goal); answers are typed by the caller from the document's types.
   * `beat` is a heartbeat's timeout: one attempt, no retry.
   */
  async #call<D>(method: string, path: string, call: RawCall): Promise<D> {
    return (await this.#raw<D>(method, path, call)).data;
  }

  #raw<D>(method: string, path: string, { headers, body, query, safety = 'repeatable', beat, signal, timeoutMs, ...more }: RawCall) {
    const request = this.#api.request as unknown as (m: string, path: string, init: object) => Promise<FetchResult<D>>;
    const policy = beat ? { ...this.#policy, maxAttempts: 1 } : this.#policy;
    const init = (s: AbortSignal) => request(method, path, { headers, body, params: { query }, signal: s, ...more });
    return send(init, { safety, policy, timeoutMs: beat ?? timeoutMs ?? this.#timeoutMs, signal });
  }

  #send<D>(safety: Safety, opts: CallOptions, attempt: (signal: AbortSignal) => Promise<FetchResult<D>>) {
    return send(attempt, { safety, policy: this.#policy, timeoutMs: opts.timeoutMs ?? this.#timeoutMs, signal: opts.signal });
  }
}

const sessionPath = (id: string) => `/sessions/${encodeURIComponent(id)}`;
const conversationPath = (id: string) => `/conversations/${encodeURIComponent(id)}`;
const turnHeaders = (turn: GrantedTurn) => ({ 'turn-token': turn.turnToken });
const turnPath = (id: string, turn: GrantedTurn) => `${conversationPath(id)}/turns/${encodeURIComponent(turn.turnId)}`;

type Transcript = { items: Item[]; session: Session };
type RawCall = CallOptions & {
  headers?: object;
  body?: unknown;
  query?: object;
  safety?: Safety;
  beat?: number | undefined;
  /** Sent as is (an NDJSON body), and a 2xx read as text. */
  bodySerializer?: (b: unknown) => string;
  parseAs?: 'text';
};
type PageQuery = PageOptions & { cursor?: string };

/** The pages of a session's items (a session, or a conversation's live one) through nextCursor. */
async function* pagesOf(list: (q: PageQuery) => Promise<MessagesPage>, page: PageOptions): AsyncGenerator<MessagesPage, void, undefined> {
  let cursor: string | undefined;
  do {
    const p = await list({ ...page, ...(cursor !== undefined ? { cursor } : {}) });
    yield p;
    cursor = p.nextCursor ?? undefined;
  } while (cursor !== undefined);
}

/** Every page; starts over (up to maxRestarts times) when an in-place compaction makes the cursor stale. */
async function readWhole(
  list: (q: PageQuery) => Promise<MessagesPage>,
  { maxRestarts = 3, ...page }: PageOptions & { maxRestarts?: number },
) {
  for (let restart = 0; ; restart++) {
    try {
      const items: Item[] = [];
      let session: Session | undefined;
      for await (const p of pagesOf(list, page)) {
        items.push(...p.messages);
        session = p.session;
      }
      return { items, session: session! };
    } catch (err) {
      if (!(err instanceof CursorStaleError) || restart >= maxRestarts) throw err;
    }
  }
}

/** A DELETE done; a 404 after an attempt that got no answer counts as done (that attempt deleted it). */
async function deleted(sent: Promise<unknown>): Promise<void> {
  try {
    await sent;
  } catch (err) {
    if (!(err instanceof NotFoundError && err.earlierAttemptMayHaveApplied)) throw err;
  }
}

/** An append's body, serialized once so every retry sends the same bytes. */
function appendRequest(items: readonly Item[], expectedCount: number | undefined) {
  const request = { messages: [...items], ...(expectedCount !== undefined ? { expectedCount } : {}) };
  return [request, JSON.stringify(request)] as const;
}

/** A rotation is repeatable (a repeat is adopted); an in-place compaction is not (a repeat would compact twice). */
const compressSafety = (req: CompressRequest): Safety => (req.mode === 'rotate' ? 'repeatable' : 'once');

/** The service answered with the stored first response to this key or operation id. */
const replayedOf = (r: { response: Response }) => r.response.headers.get('idempotent-replayed') === 'true';

/** Tags whatever a keyed request throws with its key, so the caller can retry it later, still at most once. */
async function keyed<T>(key: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof LineageError) err.idempotencyKey = key;
    throw err;
  }
}
