// The storm's HTTP clients, written as a careful agent would be: an appender sends each item
// with an Idempotency-Key and retries it (same key) on a 503 or a dropped request until it is
// acknowledged, and follows a 409 session_ended to the live session it names; a compactor asks
// for compactions in mixed modes and follows `adopted` and rotations to the tip.
import { SUMMARY_PREFIX } from '../../../lib/items/types.js';
import { sleep } from '../../fixtures/engines.js';

export interface Ack {
  marker: string;
  /** The session that acknowledged it (the one the item landed on). */
  sessionId: string;
}

export interface StormTally {
  acks: Ack[];
  /** Markers never acknowledged before the clients' deadline. */
  unacked: string[];
  appendRequests: number;
  follows409: number;
  /** Answers by route, status and code (e.g. "append 503 unavailable", "compress 200 compressed"). */
  answers: Record<string, number>;
  /** Anything a careful client cannot handle: a 5xx other than 503, a 4xx other than 409 session_ended, a non-JSON answer. */
  unexpected: string[];
  compressRequests: number;
  /** When each 503 was answered (epoch ms), to tell the fault windows from contention. */
  unavailableAt: number[];
  /** Every "you rotated parent → child" answer (I2: each must be the one child that exists). */
  rotations: { parent: string; child: string }[];
}

export const emptyTally = (): StormTally => ({
  acks: [],
  unacked: [],
  appendRequests: 0,
  follows409: 0,
  answers: {},
  unexpected: [],
  compressRequests: 0,
  unavailableAt: [],
  rotations: [],
});

/** The live tip each chain is known to have, shared by its appenders and compactors. */
export type Tips = Map<string, string>;

export interface StormHttp {
  baseUrl: string;
  key: string;
}

type Answer = { status: number; body: Record<string, unknown> | undefined };

async function post(http: StormHttp, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer | 'dropped'> {
  try {
    const res = await fetch(http.baseUrl + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${http.key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(40_000),
    });
    const text = await res.text();
    try {
      return { status: res.status, body: JSON.parse(text) as Record<string, unknown> };
    } catch {
      return { status: res.status, body: undefined };
    }
  } catch {
    return 'dropped';
  }
}

function count(t: StormTally, route: string, a: Answer | 'dropped'): string {
  const what =
    a === 'dropped'
      ? 'dropped'
      : [a.status, (a.body?.error as { code?: string } | undefined)?.code ?? a.body?.outcome, a.body?.reason]
          .filter((x) => x !== undefined)
          .map(String)
          .join(' ');
  const label = `${route} ${what}`;
  if (a !== 'dropped' && a.status === 503) t.unavailableAt.push(Date.now());
  t.answers[label] = (t.answers[label] ?? 0) + 1;
  return label;
}

/** A message of a few dozen words that names its marker (so compactions have something to save). */
export function stormItem(marker: string, n: number): Record<string, string> {
  const words = Array.from({ length: 24 }, (_, i) => `w${(n * 7 + i * 13) % 101}`).join(' ');
  return { role: n % 2 === 0 ? 'user' : 'assistant', content: `${marker} ${words}` };
}

export const markerOf = (content: unknown): string | undefined =>
  typeof content === 'string' && !content.startsWith(SUMMARY_PREFIX) ? content.split(' ')[0] : undefined;

export interface AppenderOptions {
  http: StormHttp;
  chain: string;
  tips: Tips;
  name: string;
  /** New items per second (each sent at once, up to `maxInFlight` at a time). */
  perSecond: number;
  maxInFlight: number;
  /** Stop starting new items at this instant; retries go on until `deadline`. */
  until: number;
  deadline: number;
  tally: StormTally;
}

export async function runAppender(o: AppenderOptions): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  const period = 1000 / o.perSecond;
  let next = Date.now();
  for (let n = 0; Date.now() < o.until; n++) {
    while (inFlight.size >= o.maxInFlight) await Promise.race(inFlight);
    const p = appendOne(o, `${o.name}-${n}`, n).finally(() => inFlight.delete(p));
    inFlight.add(p);
    next += period;
    await sleep(Math.max(0, next - Date.now()));
  }
  await Promise.all(inFlight);
}

async function appendOne(o: AppenderOptions, marker: string, n: number): Promise<void> {
  const item = stormItem(marker, n);
  while (Date.now() < o.deadline) {
    const target = o.tips.get(o.chain)!;
    o.tally.appendRequests++;
    const a = await post(o.http, `/sessions/${target}/messages`, { messages: [item] }, { 'idempotency-key': marker });
    const label = count(o.tally, 'append', a);
    if (a !== 'dropped' && a.status === 200) {
      const session = a.body?.session as { sessionId: string } | undefined;
      o.tally.acks.push({ marker, sessionId: session?.sessionId ?? target });
      return;
    }
    if (a !== 'dropped' && a.status === 409 && typeof a.body?.liveSessionId === 'string') {
      o.tally.follows409++;
      // Another request may have followed further already: only move forward from what we tried.
      if (o.tips.get(o.chain) === target) o.tips.set(o.chain, a.body.liveSessionId);
      continue;
    }
    if (a === 'dropped' || a.status === 503) {
      await sleep(100 + Math.random() * 300);
      continue;
    }
    o.tally.unexpected.push(`append ${marker} to ${target}: ${label} ${JSON.stringify(a.body).slice(0, 200)}`);
    return;
  }
  o.tally.unacked.push(marker);
}

export interface CompactorOptions {
  http: StormHttp;
  chain: string;
  tips: Tips;
  until: number;
  tally: StormTally;
  random: () => number;
}

export async function runCompactor(o: CompactorOptions): Promise<void> {
  while (Date.now() < o.until) {
    const target = o.tips.get(o.chain)!;
    const mode = o.random() < 0.5 ? 'rotate' : 'in_place';
    // keepLast >= 1: every compaction keeps part of its snapshot verbatim (the ledger's check relies on it).
    const keepLast = 1 + Math.floor(o.random() * 4);
    o.tally.compressRequests++;
    const a = await post(o.http, `/sessions/${target}/compress`, { mode, keepLast, origin: o.random() < 0.5 ? 'turn' : 'manual' });
    const label = count(o.tally, 'compress', a);
    if (a !== 'dropped' && a.status === 200) {
      const live = a.body?.sessionId;
      if (a.body?.outcome === 'compressed' && a.body.mode === 'rotate') o.tally.rotations.push({ parent: target, child: String(live) });
      if (typeof live === 'string' && live !== target && o.tips.get(o.chain) === target) o.tips.set(o.chain, live);
    } else if (a === 'dropped' || a.status !== 503) {
      o.tally.unexpected.push(`compress ${target}: ${label} ${JSON.stringify(a === 'dropped' ? null : a.body).slice(0, 200)}`);
    }
    await sleep(200 + o.random() * 800);
  }
}
