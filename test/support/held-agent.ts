// An agent that compacts with its own engine through a held attempt, over raw HTTP (SPEC E1-E5):
// begin → heartbeats while its engine runs → commit, or abort in `finally`. The seed's flow,
// written against the wire (no client package), so the acceptance and chaos suites depend on the
// routes alone. Every call is recorded, so a test can say what the agent did, not only what it got.
import type { Api, ApiResponse } from '../e2e/http/api-client.js';

/** What an agent's engine gets: the snapshot, the attempt and a signal aborted when the lease is lost. */
export interface EngineInput {
  messages: unknown[];
  attempt: { attemptId: string; sessionId: string; fence: number; throughSeq: number; ttlMs: number; heartbeatIntervalMs: number };
  signal: AbortSignal;
}
export type AgentEngine = (input: EngineInput) => Promise<unknown[]>;

export interface AgentOptions {
  /** `/conversations/{id}` or `/sessions/{id}`: where the begin goes. */
  base: string;
  mode?: 'in_place' | 'rotate';
  origin?: 'turn' | 'review' | 'manual';
  ttlMs?: number;
  /** Send heartbeats while the engine runs (default true); false plays a paused holder. */
  heartbeat?: boolean;
  /** Called once the begin answered, before the engine (a test's hook). */
  onStarted?: (begin: ApiResponse) => Promise<void> | void;
}

export interface AgentRun {
  begin: ApiResponse;
  /** Times the engine was called (C6: at most once). */
  engineCalls: number;
  heartbeats: ApiResponse[];
  commit?: ApiResponse;
  abort?: ApiResponse;
  error?: unknown;
}

/** Base path of an attempt's routes from the begin's base and the attempt id. */
export function attemptPath(base: string, attemptId: string, suffix = ''): string {
  return `${base}/compactions/${attemptId}${suffix}`;
}

/** The seed's flow over HTTP. Never throws: an engine error is in `error`, after the abort. */
export async function runAgent(api: Api, engine: AgentEngine, opts: AgentOptions): Promise<AgentRun> {
  const body: Record<string, unknown> = {};
  if (opts.mode) body.mode = opts.mode;
  if (opts.origin) body.origin = opts.origin;
  if (opts.ttlMs) body.ttlMs = opts.ttlMs;
  const begin = await api('POST', `${opts.base}/compactions`, { body });
  const run: AgentRun = { begin, engineCalls: 0, heartbeats: [] };
  if (begin.status !== 201 || begin.body?.outcome !== 'started') return run; // C1/C13: never run the engine
  const { attemptId, leaseToken, heartbeatIntervalMs } = begin.body.attempt;
  const headers = { 'lease-token': leaseToken as string };
  const lost = new AbortController();
  let beating: Promise<void> = Promise.resolve();
  const timer =
    opts.heartbeat === false
      ? undefined
      : setInterval(() => {
          beating = beating.then(async () => {
            const r = await api('POST', attemptPath(opts.base, attemptId, '/heartbeat'), { headers });
            run.heartbeats.push(r);
            if (r.status === 409) lost.abort(new Error('lease_lost'));
          });
        }, heartbeatIntervalMs as number);
  let committed = false;
  try {
    await opts.onStarted?.(begin);
    run.engineCalls++;
    const replacement = await engine({ messages: begin.body.messages, attempt: begin.body.attempt, signal: lost.signal });
    clearInterval(timer);
    await beating;
    if (!lost.signal.aborted) {
      run.commit = await api('POST', attemptPath(opts.base, attemptId, '/commit'), { headers, body: { messages: replacement } });
      // A 400/413 leaves the attempt running: it is still ours to abort.
      committed = run.commit.status !== 400 && run.commit.status !== 413;
    }
  } catch (err) {
    run.error = err;
  } finally {
    clearInterval(timer);
    await beating.catch(() => undefined);
    if (!committed) run.abort = await api('DELETE', attemptPath(opts.base, attemptId), { headers });
  }
  return run;
}

/** A deterministic engine of the agent's own: keeps the first user item, summarizes the rest in one assistant item. */
export function summarizingEngine(
  hold?: (input: EngineInput) => Promise<void>,
): AgentEngine & { calls: EngineInput[]; outputs: unknown[][] } {
  const calls: EngineInput[] = [];
  const outputs: unknown[][] = [];
  const engine = async (input: EngineInput) => {
    calls.push(input);
    await hold?.(input);
    const firstUser = input.messages.find((m) => (m as { role?: string }).role === 'user');
    const out = [
      ...(firstUser ? [firstUser] : []),
      { role: 'assistant', content: `AGENT SUMMARY of ${input.messages.length} items through seq ${input.attempt.throughSeq}` },
    ];
    outputs.push(out);
    return out;
  };
  return Object.assign(engine, { calls, outputs });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
