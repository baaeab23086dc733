// A LineageClient over real HTTP whose requests are recorded, and which can hold a request
// before it is sent (to have it in flight while the test calls something else) or fail it the
// way a dropped connection does. For the ported Agents SDK session tests, whose upstream
// versions do the same with mocked OpenAI clients.
import { LineageClient, type LineageClientOptions } from '../../../lib/client/index.js';

export interface WireRequest {
  method: string;
  path: string;
  key: string | null;
}

type Match = (r: WireRequest) => boolean;

interface Hold {
  match: Match;
  reached: () => void;
  outcome: Promise<'send' | 'fail'>;
}

export interface Held {
  /** Settles when the held request was made (it is not sent yet). */
  reached: Promise<void>;
  /** Sends it. */
  send(): void;
  /** Fails it as a dropped connection (fetch rejects; nothing reached the service). */
  fail(): void;
}

export class Wire {
  readonly seen: WireRequest[] = [];
  readonly #holds: Hold[] = [];
  readonly #failures: { match: Match; left: number }[] = [];

  constructor(
    readonly baseUrl: string,
    readonly apiKey: string,
  ) {}

  /** The next request `match` accepts waits until the test sends or fails it. */
  hold(match: Match): Held {
    let reached!: () => void;
    let decide!: (o: 'send' | 'fail') => void;
    const r = new Promise<void>((res) => (reached = res));
    const outcome = new Promise<'send' | 'fail'>((res) => (decide = res));
    this.#holds.push({ match, reached, outcome });
    return { reached: r, send: () => decide('send'), fail: () => decide('fail') };
  }

  /** The next `times` requests `match` accepts fail as a dropped connection. */
  fail(match: Match, times = 1): void {
    this.#failures.push({ match, left: times });
  }

  /** `METHOD /path` of every request so far. */
  lines(filter: Match = () => true): string[] {
    return this.seen.filter(filter).map((r) => `${r.method} ${r.path}`);
  }

  client(opts: Partial<LineageClientOptions> = {}): LineageClient {
    return new LineageClient({
      baseUrl: this.baseUrl,
      apiKey: this.apiKey,
      retry: { maxAttempts: 1 },
      ...opts,
      fetch: async (req) => {
        const url = new URL(req.url);
        const r: WireRequest = { method: req.method, path: url.pathname, key: req.headers.get('idempotency-key') };
        this.seen.push(r);
        const i = this.#holds.findIndex((h) => h.match(r));
        if (i >= 0) {
          const [h] = this.#holds.splice(i, 1);
          h!.reached();
          if ((await h!.outcome) === 'fail') throw new TypeError('fetch failed', { cause: new Error('socket hang up (held by the test)') });
        }
        const f = this.#failures.find((x) => x.left > 0 && x.match(r));
        if (f) {
          f.left--;
          throw new TypeError('fetch failed', { cause: new Error('ECONNREFUSED (failed by the test)') });
        }
        return fetch(req);
      },
    });
  }
}

/** Request matchers. */
export const is =
  (method: string, path: RegExp | string): Match =>
  (r) =>
    r.method === method && (typeof path === 'string' ? r.path === path : path.test(r.path));
