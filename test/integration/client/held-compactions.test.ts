// client.compactWith (held compaction attempts, SPEC E1-E4) against the real service over HTTP
// (serverless-offline), through a proxy that counts the requests and can lose an answer. The
// engines here are the test's own functions: what runs between the begin and the commit is
// the agent's business; everything else is the real service.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  LineageClient,
  LineageNetworkError,
  responsesCompactEngine,
  type CompactionEngine,
  type CompactionEngineInput,
  type Item,
  type ResponsesCompactClient,
} from '../../../lib/client/index.js';
import { LineageSession } from '../../../lib/client/agents.js';
import { startFaultProxy, type FaultProxy, type SeenRequest } from '../../support/client/fault-proxy.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';

let service: LocalService;
let apiKey: string;
let proxy: FaultProxy;
let direct: LineageClient;
let viaProxy: LineageClient;

beforeAll(async () => {
  // An attempt bound (P6) above the 4.5 MB a begin answers, so the truncated-snapshot case below exists
  // (at the default 4 MiB bound a begin hands out a bounded part instead, tested in bounded-attempts).
  service = await startLocalService({
    afterTurn: false,
    env: { COMPACTION_ATTEMPT_MAX_BYTES: String(8 * 1024 * 1024), COMPACTION_ATTEMPT_MAX_TOKENS: '10000000' },
  });
  apiKey = await service.createApiKey(`held-${randomUUID().slice(0, 8)}`);
  proxy = await startFaultProxy(service.baseUrl);
  direct = new LineageClient({ baseUrl: service.baseUrl, apiKey });
  viaProxy = new LineageClient({ baseUrl: proxy.baseUrl, apiKey, retry: { baseDelayMs: 20, maxDelayMs: 100 } });
}, 240_000);

afterEach(() => {
  proxy.setRule(() => 'forward');
  proxy.seen.length = 0;
});

afterAll(async () => {
  await proxy?.close();
  await service?.stop();
});

const turns = (n: number, tag = 't'): Item[] =>
  Array.from({ length: n }, (_, i) => ({
    role: i % 2 ? 'assistant' : 'user',
    content: `${tag}${i}: ${'the nightly export failed on the ledger table because the lock timed out; '.repeat(3)}`,
  }));
const summary: Item[] = [
  { role: 'user', content: 'the task: fix the nightly export' },
  { role: 'assistant', content: 'Summary: the export failed on a lock timeout; a longer timeout was set.' },
];

async function conversationWith(n: number, format: 'chat' | 'responses' = 'chat'): Promise<string> {
  const id = `held_${randomUUID().slice(0, 8)}`;
  await direct.putConversation(id, { format });
  await direct.appendToConversation(id, turns(n));
  return id;
}

/** An engine that records its calls and answers `answer` (after `gate`, when given). */
function recordingEngine(answer: readonly unknown[] = summary, gate?: (input: CompactionEngineInput) => Promise<void>) {
  const calls: CompactionEngineInput[] = [];
  const engine: CompactionEngine = async (input) => {
    calls.push(input);
    await gate?.(input);
    return answer;
  };
  return { engine, calls };
}

const held = (id: string) => `/conversations/${id}/compactions`;
const isCommit = (r: SeenRequest) => r.method === 'POST' && r.path.endsWith('/commit');
const isAbort = (r: SeenRequest) => r.method === 'DELETE' && r.path.includes('/compactions/');
const isBeat = (r: SeenRequest) => r.path.endsWith('/heartbeat');

/** Waits until `n` requests the proxy saw match (counted, not timed). */
async function seen(match: (r: SeenRequest) => boolean, n: number): Promise<void> {
  while (proxy.seen.filter(match).length < n) await new Promise((r) => setTimeout(r, 20));
}

/** Another agent's begin over plain HTTP: the lease is taken, nothing else. */
async function beginElsewhere(id: string, body: Record<string, unknown> = {}) {
  const res = await fetch(`${service.baseUrl}${held(id)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as { outcome: string; reason?: string; attempt?: { attemptId: string; leaseToken: string } },
  };
}

describe('client.compactWith: held compaction attempts with your own engine', () => {
  it('E1 C6: the winner calls its engine exactly once with the snapshot and the attempt (never the token), commits, and the conversation holds the replacement', async () => {
    const id = await conversationWith(6);
    const { engine, calls } = recordingEngine();
    const r = await viaProxy.compactWith(id, engine, { mode: 'rotate' });
    expect(r).toMatchObject({ outcome: 'compressed', mode: 'rotate' });
    expect(calls).toHaveLength(1);
    const [input] = calls;
    expect(input!.messages).toEqual(turns(6));
    expect(input!.attempt).toMatchObject({ mode: 'rotate', throughSeq: 6, truncated: false });
    expect(input!.attempt).not.toHaveProperty('leaseToken');
    expect(input!.signal.aborted).toBe(false);
    const { items, session } = await direct.readConversation(id);
    expect(items).toEqual(summary);
    expect(session.sessionId).toBe(r.sessionId);
    expect((await direct.conversationLineage(id)).chain).toHaveLength(2);
    // Begin, an immediate heartbeat (L5), the commit; no abort after a commit.
    expect(proxy.seen.filter((q) => q.method === 'POST' && q.path === held(id))).toHaveLength(1);
    expect(proxy.seen.filter(isBeat).length).toBeGreaterThanOrEqual(1);
    expect(proxy.seen.filter(isCommit)).toHaveLength(1);
    expect(proxy.seen.filter(isAbort)).toHaveLength(0);
    // The token travels in the Lease-Token header, never in a path or body.
    const token = proxy.seen.find(isCommit)!.headers['lease-token'];
    expect(typeof token).toBe('string');
    expect(proxy.seen.some((q) => q.path.includes(token as string) || q.body.includes(token as string))).toBe(false);
  });

  it('E1 C1: a loser is answered skipped/locked and never calls its engine; the holder is untouched', async () => {
    const id = await conversationWith(6);
    const other = await beginElsewhere(id);
    expect(other.status).toBe(201);
    const { engine, calls } = recordingEngine();
    const r = await viaProxy.compactWith(id, engine);
    expect(r).toMatchObject({ outcome: 'skipped', reason: 'locked' });
    expect(calls).toHaveLength(0);
    expect(proxy.seen.map((q) => `${q.method} ${q.path}`)).toEqual([`POST ${held(id)}`]);
    const { attemptId, leaseToken } = other.body.attempt!;
    const abort = await fetch(`${service.baseUrl}${held(id)}/${attemptId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${apiKey}`, 'lease-token': leaseToken },
    });
    expect(abort.status).toBe(200);
  });

  it('E1 I1: two concurrent compactWith on one conversation → one engine call, one child', async () => {
    const id = await conversationWith(8);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const a = recordingEngine(summary, () => gate);
    const b = recordingEngine(summary, () => gate);
    const first = viaProxy.compactWith(id, a.engine, { mode: 'rotate' });
    // The second starts once the first holds the lease (its engine runs).
    while (a.calls.length === 0) await new Promise((r) => setTimeout(r, 20));
    const second = await new LineageClient({ baseUrl: proxy.baseUrl, apiKey }).compactWith(id, b.engine, { mode: 'rotate' });
    release();
    expect(second).toMatchObject({ outcome: 'skipped', reason: 'locked' });
    expect(await first).toMatchObject({ outcome: 'compressed' });
    expect(a.calls.length + b.calls.length).toBe(1);
    expect((await direct.conversationLineage(id)).chain).toHaveLength(2);
  });

  it('L5 E2: heartbeats keep the lease past its TTL while the engine runs; a begin meanwhile is locked; the commit lands', async () => {
    const id = await conversationWith(6);
    const ttlMs = 5000;
    let locked: unknown;
    const { engine } = recordingEngine(summary, async ({ attempt }) => {
      expect(attempt.heartbeatIntervalMs).toBe(ttlMs / 2);
      // Four heartbeats: the immediate one and three more, one interval apart: past one TTL.
      await seen(isBeat, 4);
      locked = (await beginElsewhere(id)).body;
    });
    const r = await viaProxy.compactWith(id, engine, { ttlMs });
    expect(locked).toMatchObject({ outcome: 'skipped', reason: 'locked' });
    expect(r).toMatchObject({ outcome: 'compressed', mode: 'in_place' });
    expect((await direct.readConversation(id)).items).toEqual(summary);
  }, 30_000);

  it('L5: after cap = floor(ttl/interval) consecutive failed heartbeats the engine signal aborts; nothing is committed and the lease is released', async () => {
    const id = await conversationWith(6);
    proxy.setRule((q) => (isBeat(q) ? 'drop-request' : 'forward'));
    let reason: unknown;
    const { engine } = recordingEngine(
      summary,
      ({ signal }) => new Promise((resolve) => signal.addEventListener('abort', () => ((reason = signal.reason), resolve()))),
    );
    const r = await viaProxy.compactWith(id, engine, { ttlMs: 5000 });
    expect(r).toMatchObject({ outcome: 'skipped', reason: 'lease_lost' });
    expect(reason).toBeInstanceOf(LineageNetworkError); // the last heartbeat's failure
    expect(proxy.seen.filter(isBeat)).toHaveLength(2); // cap = floor(5000 / 2500)
    expect(proxy.seen.filter(isCommit)).toHaveLength(0);
    expect(proxy.seen.filter(isAbort)).toHaveLength(1);
    expect((await direct.readConversation(id)).items).toEqual(turns(6));
    expect((await beginElsewhere(id, { origin: 'manual' })).status).toBe(201); // I3: free
  }, 30_000);

  it('L6 E5: a paused holder (no heartbeat ran) is taken over after its TTL; its late commit is refused lease_lost, it answers skipped/lease_lost and the new holder is untouched', async () => {
    const id = await conversationWith(6);
    let beats = 0;
    const client = new LineageClient({
      baseUrl: service.baseUrl,
      apiKey,
      fetch: async (req) => {
        const res = await fetch(req);
        if (req.url.endsWith('/heartbeat')) beats++;
        return res;
      },
    });
    let taker: { attempt: { attemptId: string; leaseToken: string } } | undefined;
    const { engine } = recordingEngine(summary, async () => {
      while (beats < 1) await new Promise((r) => setTimeout(r, 20)); // the immediate heartbeat answered
      // The process pauses (a stop-the-world pause, a frozen container): no timer runs, so no heartbeat.
      // Meanwhile another agent takes the session over once the lease expired (E5).
      for (;;) {
        const out = execFileSync('curl', ['-s', '-X', 'POST', `${service.baseUrl}${held(id)}`, '-H', `authorization: Bearer ${apiKey}`]);
        const answer = JSON.parse(out.toString('utf8')) as { outcome: string; attempt: { attemptId: string; leaseToken: string } };
        if (answer.outcome === 'started') {
          taker = answer;
          break;
        }
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
      }
    });
    const r = await client.compactWith(id, engine, { ttlMs: 5000 });
    expect(r).toMatchObject({ outcome: 'skipped', reason: 'lease_lost' });
    expect(beats).toBe(1);
    expect((await direct.readConversation(id)).items).toEqual(turns(6));
    const { attemptId, leaseToken } = taker!.attempt;
    const headers = { authorization: `Bearer ${apiKey}`, 'lease-token': leaseToken };
    expect(await (await fetch(`${service.baseUrl}${held(id)}/${attemptId}`, { headers })).json()).toMatchObject({
      attempt: { status: 'running' },
    });
    expect((await fetch(`${service.baseUrl}${held(id)}/${attemptId}`, { method: 'DELETE', headers })).status).toBe(200);
  }, 30_000);

  it('C6 I3: an engine that throws gets the abort, its error propagates, and the lease is free for the next attempt', async () => {
    const id = await conversationWith(6);
    const boom = new Error('the model is down');
    const engine: CompactionEngine = () => {
      throw boom;
    };
    await expect(viaProxy.compactWith(id, engine)).rejects.toBe(boom);
    expect(proxy.seen.filter(isAbort)).toHaveLength(1);
    expect(proxy.seen.filter(isCommit)).toHaveLength(0);
    expect((await direct.readConversation(id)).items).toEqual(turns(6));
    const { engine: next, calls } = recordingEngine();
    expect(await direct.compactWith(id, next)).toMatchObject({ outcome: 'compressed' });
    expect(calls).toHaveLength(1);
  });

  it('C9: the caller aborting its signal before the commit: the engine is told, nothing is committed, the attempt is aborted', async () => {
    const id = await conversationWith(6);
    const caller = new AbortController();
    const { engine, calls } = recordingEngine(summary, async () => {
      caller.abort(new Error('the user closed the tab'));
    });
    const r = await viaProxy.compactWith(id, engine, { signal: caller.signal });
    expect(r).toMatchObject({ outcome: 'skipped', reason: 'cancelled' });
    expect(calls[0]!.signal.aborted).toBe(true);
    expect(proxy.seen.filter(isCommit)).toHaveLength(0);
    expect(proxy.seen.filter(isAbort)).toHaveLength(1);
    expect((await direct.readConversation(id)).items).toEqual(turns(6));
    expect(await direct.compactWith(id, recordingEngine().engine)).toMatchObject({ outcome: 'compressed' });
  });

  it('E3: a commit whose answer was lost is sent again with the same attempt; the service replays its first outcome and nothing is applied twice', async () => {
    const id = await conversationWith(6);
    let dropped = 0;
    proxy.setRule((q) => (isCommit(q) && dropped++ === 0 ? 'drop-response' : 'forward'));
    const { engine, calls } = recordingEngine();
    const r = await viaProxy.compactWith(id, engine, { mode: 'rotate' });
    expect(r).toMatchObject({ outcome: 'compressed', mode: 'rotate', replayed: true });
    const commits = proxy.seen.filter(isCommit);
    expect(commits).toHaveLength(2);
    expect(commits[1]!.path).toBe(commits[0]!.path);
    expect(commits[1]!.body).toBe(commits[0]!.body);
    expect(calls).toHaveLength(1);
    expect(proxy.seen.filter(isAbort)).toHaveLength(0);
    const lineage = await direct.conversationLineage(id);
    expect(lineage.chain).toHaveLength(2);
    expect(lineage.tip).toBe(r.sessionId);
    expect((await direct.readConversation(id)).items).toEqual(summary);
  });

  it('E1: a snapshot the begin cut at the response budget (truncated) is read to throughSeq before the engine runs', async () => {
    // 5 items of ~1 MB: more than the 4.5 MB a begin answers.
    const id = `held_${randomUUID().slice(0, 8)}`;
    await direct.putConversation(id, { format: 'chat' });
    const big = Array.from({ length: 5 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${i}:${'x'.repeat(1_000_000)}` }));
    for (const item of big) await direct.appendToConversation(id, [item]);
    const { engine, calls } = recordingEngine();
    expect(await viaProxy.compactWith(id, engine)).toMatchObject({ outcome: 'compressed' });
    expect(calls[0]!.messages).toEqual(big);
    expect(calls[0]!.attempt).toMatchObject({ throughSeq: 5, truncated: false });
    expect(proxy.seen.some((q) => q.method === 'GET' && q.path.endsWith('/messages'))).toBe(true);
  }, 60_000);
});

describe('responsesCompactEngine: OpenAI responses.compact as the engine', () => {
  it('E7: the output (kept user messages and an opaque compaction item) becomes the conversation, verbatim', async () => {
    const id = await conversationWith(6, 'responses');
    const output = [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 't0: the nightly export failed' }] },
      { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAAB-opaque-ciphertext' },
    ];
    const requests: { body: unknown; signal: AbortSignal | undefined }[] = [];
    // The model is the fake: a structural stand-in for `new OpenAI()`; the service is real.
    const openai: ResponsesCompactClient = {
      responses: {
        compact: async (body, options) => {
          requests.push({ body, signal: options?.signal });
          return { output };
        },
      },
    };
    const r = await direct.compactWith(id, responsesCompactEngine(openai, { model: 'gpt-5.1-codex-max' }));
    expect(r).toMatchObject({ outcome: 'compressed' });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.body).toEqual({ model: 'gpt-5.1-codex-max', input: turns(6) });
    expect(requests[0]!.signal).toBeInstanceOf(AbortSignal);
    expect((await direct.readConversation(id)).items).toEqual(output);
  });
});

describe('LineageSession with compaction.engine', () => {
  it('C6: runCompaction and compact() compact through compactWith with the engine, never the service engine', async () => {
    const { engine, calls } = recordingEngine([
      { type: 'message', role: 'user', content: 'the task' },
      { type: 'message', role: 'assistant', content: 'Summary: done so far' },
    ]);
    const s = new LineageSession({ client: viaProxy, compaction: { engine, mode: 'rotate' } });
    await s.addItems(turns(6).map((t) => ({ type: 'message', ...t }) as never));
    const before = s.liveSessionId;
    expect(await s.runCompaction({ force: true })).toBeNull();
    expect(calls).toHaveLength(1);
    expect(calls[0]!.attempt).toMatchObject({ mode: 'rotate', throughSeq: 6 });
    expect(proxy.seen.filter((q) => q.path.endsWith('/compress'))).toHaveLength(0);
    expect(proxy.seen.filter(isCommit)).toHaveLength(1);
    expect(s.liveSessionId).not.toBe(before);
    expect(await s.getItems()).toEqual([
      { type: 'message', role: 'user', content: 'the task' },
      { type: 'message', role: 'assistant', content: 'Summary: done so far' },
    ]);
    await s.addItems(turns(4, 'u').map((t) => ({ type: 'message', ...t }) as never));
    expect(await s.compact({ mode: 'in_place' })).toMatchObject({ outcome: 'compressed', mode: 'in_place' });
    expect(calls).toHaveLength(2);
  });
});
