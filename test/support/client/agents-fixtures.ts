// Shared by the LineageSession tests: a client whose every request (and its answer's status) is
// recorded, optionally failing some as a dropped connection, and Agents SDK items to append.
import type { AgentInputItem } from '@openai/agents-core';
import { LineageClient } from '../../../lib/client/index.js';

export interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  key: string | null;
  /** The answer's status (undefined while in flight or when the request failed without one). */
  status?: number;
}

/** A client whose every request is recorded, optionally failing some. */
export function recording(baseUrl: string, apiKey: string, fail?: (r: Seen) => boolean) {
  const seen: Seen[] = [];
  const client = new LineageClient({
    baseUrl,
    apiKey,
    retry: { maxAttempts: 2, baseDelayMs: 1 },
    fetch: async (req) => {
      const url = new URL(req.url);
      const r: Seen = { method: req.method, path: url.pathname, query: url.searchParams, key: req.headers.get('idempotency-key') };
      seen.push(r);
      if (fail?.(r)) throw new TypeError('fetch failed', { cause: new Error('socket hang up') });
      const res = await fetch(req);
      r.status = res.status;
      return res;
    },
  });
  return { client, seen };
}

export const message = (role: 'user' | 'assistant', text: string): AgentInputItem =>
  role === 'user'
    ? { type: 'message', role, content: [{ type: 'input_text', text }] }
    : { type: 'message', role, status: 'completed', content: [{ type: 'output_text', text }] };

export const exchange = (n: number, tag = 'message'): AgentInputItem[] =>
  Array.from({ length: n }, (_, i) =>
    message(
      i % 2 ? 'assistant' : 'user',
      `${tag} ${i}: ${'the nightly export failed on the ledger table because the lock timed out; '.repeat(3)}`,
    ),
  );
