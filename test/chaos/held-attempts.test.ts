// Held compaction attempts (SPEC E1-E5) under faults, on a stack this file owns (own Redis nodes,
// own DynamoDB Local, the service under serverless-offline; test/support/chaos/own-stack.ts):
// 1. a Redis node SIGKILLed while an agent's engine runs (the attempt keeps its quorum and commits,
//    one child), and two killed (503 lease_unavailable, nothing written, the lease works again);
// 2. DynamoDB Local SIGSTOPped as a held commit sends its transaction, with short DynamoDB budgets
//    (in process, so the stall hits that transaction exactly): 503 outcome_unknown, never the
//    "nothing applied" `unavailable`; after the stall a repeat of the commit tells what happened;
// 3. an agent process SIGKILLed between its begin and its commit: the next agent takes over after
//    the TTL, exactly one child, and the dead agent's commit (replayed with its token) is refused.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleHttpRequest } from '../../functions/adapters/api-gateway.js';
import type { ApiDeps } from '../../lib/api/http-app.js';
import { createDynamoClient } from '../../lib/aws-clients.js';
import { HeldAttempts } from '../../lib/compaction/held-attempts.js';
import { DynamoLineageStore } from '../../lib/lineage/dynamo/store.js';
import { silentLogger } from '../../lib/logger.js';
import { sessionKey, type SessionRef } from '../../lib/session-ref.js';
import { apiClient, type Api } from '../e2e/http/api-client.js';
import { appendAll, createSession, turns } from '../e2e/http/session-helpers.js';
import { recordCounts } from '../support/chaos/counts.js';
import { waitLeaseFree } from '../support/chaos/invariants.js';
import { startOwnStack, type OwnStack } from '../support/chaos/own-stack.js';
import { attemptPath, runAgent, sleep, summarizingEngine } from '../support/held-agent.js';

const TTL = 5000;
let stack: OwnStack;
let api: Api;
let tenant: string;
const counts = { racesRun: 0, nodeFaultsInjected: 0, forksFound: 0, leakedLeases: 0 };

beforeAll(async () => {
  stack = await startOwnStack({ tableName: 'chaos-held-attempts' });
  tenant = `chaos-held-${randomUUID().slice(0, 8)}`;
  api = apiClient(stack.service.baseUrl, await stack.createApiKey(tenant));
}, 180_000);
afterAll(async () => {
  recordCounts('held-attempts', counts);
  await stack?.stop();
});

async function session(n = 10): Promise<string> {
  const id = await createSession(api);
  await appendAll(api, id, turns(0, n / 2));
  return id;
}

async function expectOneLineage(id: string, child?: string): Promise<void> {
  const chain = (await api('GET', `/sessions/${id}/lineage`)).body.chain.map((s: { sessionId: string }) => s.sessionId);
  const children = await stack.store.children({ tenantId: tenant, sessionId: id });
  if (children.length > 1) counts.forksFound++;
  expect(children.length).toBeLessThanOrEqual(1);
  expect(chain).toEqual(child ? [id, child] : [id]);
}

describe('held attempts across Redis node faults', () => {
  it('E1 E2 L4 I1 I3: one of three Redis nodes SIGKILLed while the agent’s engine runs: heartbeats and the commit keep the quorum; one child; the lease is free after', async () => {
    const id = await session();
    const base = `/sessions/${id}`;
    counts.racesRun++;
    const rivals = summarizingEngine();
    const run = await runAgent(
      api,
      summarizingEngine(async () => {
        await stack.nodes.kill(1);
        counts.nodeFaultsInjected++;
        // A heartbeat interval passes with the node down, and rivals race for the lease meanwhile.
        const raced = await Promise.all(Array.from({ length: 3 }, () => runAgent(api, rivals, { base, mode: 'rotate', ttlMs: TTL })));
        for (const r of raced) expect(r.begin.body).toMatchObject({ outcome: 'skipped', reason: 'locked' });
        await sleep(TTL * 0.6);
      }),
      { base, mode: 'rotate', ttlMs: TTL },
    );
    try {
      expect(run.heartbeats.length).toBeGreaterThanOrEqual(1);
      for (const hb of run.heartbeats) expect(hb.status).toBe(200);
      expect(run.commit!.body).toMatchObject({ outcome: 'compressed', mode: 'rotate' });
      expect(rivals.calls).toHaveLength(0);
      await expectOneLineage(id, run.commit!.body.sessionId);
      const free = await waitLeaseFree(stack.lease, { tenantId: tenant, sessionId: id }, 2000);
      if (!free) counts.leakedLeases++;
      expect(free).toBe(true);
    } finally {
      await stack.nodes.restart(1);
      await stack.nodes.ready();
    }
  });

  it('E1 E2 C2 L4: two of three nodes killed under a held attempt: heartbeat and commit answer 503 lease_unavailable, nothing is written; once back, a new agent takes the session over after the TTL and commits once', async () => {
    const id = await session();
    const base = `/sessions/${id}`;
    const begin = await api('POST', `${base}/compactions`, { body: { mode: 'rotate', ttlMs: TTL } });
    expect(begin.status).toBe(201);
    const headers = { 'lease-token': begin.body.attempt.leaseToken as string };
    await Promise.all([stack.nodes.kill(0), stack.nodes.kill(2)]);
    counts.nodeFaultsInjected += 2;
    try {
      const hb = await api('POST', attemptPath(base, begin.body.attempt.attemptId, '/heartbeat'), { headers });
      expect([hb.status, hb.body.error.code]).toEqual([503, 'lease_unavailable']);
      const commit = await api('POST', attemptPath(base, begin.body.attempt.attemptId, '/commit'), {
        headers,
        body: {
          messages: [
            { role: 'user', content: 'q' },
            { role: 'assistant', content: 'S' },
          ],
        },
      });
      expect([commit.status, commit.body.error?.code]).toEqual([503, 'lease_unavailable']);
      const fresh = await api('POST', `${base}/compactions`, { body: { mode: 'rotate', ttlMs: TTL } });
      expect([fresh.status, fresh.body.error?.code]).toEqual([503, 'lease_unavailable']);
      await expectOneLineage(id);
      const s = (await api('GET', `/sessions/${id}`)).body.session;
      expect([s.childSessionId, s.messageCount]).toEqual([null, 10]);
    } finally {
      await Promise.all([stack.nodes.restart(0), stack.nodes.restart(2)]);
      await stack.nodes.ready();
    }
    // The nodes came back empty: the next begin may win the lease at once, or meet the old record
    // until its lease expiry; either way one agent commits, once.
    let next = await runAgent(api, summarizingEngine(), { base, mode: 'rotate', ttlMs: TTL });
    for (let i = 0; i < 40 && !next.commit; i++) {
      await sleep(500);
      next = await runAgent(api, summarizingEngine(), { base, mode: 'rotate', ttlMs: TTL });
    }
    expect(next.commit!.body.outcome).toBe('compressed');
    await expectOneLineage(id, next.commit!.body.sessionId);
  });
});

describe('held attempts across a DynamoDB stall', () => {
  it.each([
    ['rotate', 'TransactWriteItemsCommand'],
    ['in_place', 'TransactWriteItemsCommand'],
    ['rotate', 'UpdateItemCommand'],
  ] as const)(
    'E3 I2 F1: DynamoDB stalled (SIGSTOP) as a held commit (%s) sends its %s (the transaction, or the claim): 503 outcome_unknown, never unavailable; after the stall a repeat tells the truth',
    async (mode, stallAt) => {
      const fast = createDynamoClient({ endpoint: stack.dynamo.url, maxAttempts: 1, requestTimeoutMs: 400, connectTimeoutMs: 300 });
      let stalled = false;
      let armed = false;
      fast.middlewareStack.add(
        (next, context) => async (args) => {
          if (armed && context.commandName === stallAt && !stalled) {
            stalled = true;
            await stack.pauseDynamo();
            counts.nodeFaultsInjected++;
          }
          return next(args);
        },
        { step: 'initialize', name: 'chaosStallAtHeldCommit' },
      );
      const store = new DynamoLineageStore({ client: fast, tableName: stack.tableName });
      const held = new HeldAttempts({ lease: stack.lease, store, logger: silentLogger });
      const deps: ApiDeps = {
        store,
        held,
        compact: () => Promise.reject(new Error('not used')),
        publisher: { publish: () => Promise.resolve() },
        logger: silentLogger,
        apiKeys: { resolve: () => Promise.resolve(tenant) },
      };
      const call = async (method: string, path: string, body?: unknown, token?: string) => {
        const r = await handleHttpRequest(
          {
            rawPath: path,
            requestContext: { http: { method } },
            headers: { authorization: 'Bearer chaos', 'content-type': 'application/json', ...(token ? { 'lease-token': token } : {}) },
            ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
            isBase64Encoded: false,
          } as never,
          deps,
          { requestId: `held-stall-${randomUUID().slice(0, 6)}` },
        );
        return { status: r.statusCode, headers: r.headers ?? {}, body: JSON.parse(r.body ?? 'null') };
      };
      const id = await session();
      const ref: SessionRef = { tenantId: tenant, sessionId: id };
      counts.racesRun++;
      try {
        const begin = await call('POST', `/sessions/${id}/compactions`, { mode, ttlMs: TTL });
        expect(begin.status).toBe(201);
        const { attemptId, leaseToken } = begin.body.attempt;
        const replacement = {
          messages: [
            { role: 'user', content: 'q' },
            { role: 'assistant', content: 'STALLED SUMMARY' },
          ],
        };
        armed = true;
        const res = await call('POST', `/sessions/${id}/compactions/${attemptId}/commit`, replacement, leaseToken);
        stack.resumeDynamo();
        expect(stalled).toBe(true);
        expect([res.status, res.body.error?.code]).toEqual([503, 'outcome_unknown']);
        expect(res.headers['retry-after']).toBeDefined();
        // I3: the lease does not outlive the attempt by more than its TTL.
        expect(await waitLeaseFree(stack.lease, ref, TTL + 2000)).toBe(true);
        // After the stall, the truth: a repeat of the commit agrees with what landed, at most once.
        // (DynamoDB Local works off its queue after SIGCONT: what landed is read after the repeat.)
        await sleep(500);
        const repeat = await api('POST', `/sessions/${id}/compactions/${attemptId}/commit`, {
          headers: { 'lease-token': leaseToken },
          body: replacement,
        });
        const children = await stack.store.children(ref);
        const now = await stack.store.getSession(ref);
        const landed = mode === 'rotate' ? children.length === 1 : (now?.generation ?? 0) > 0;
        expect(children.length).toBeLessThanOrEqual(1);
        if (repeat.status === 409) {
          // Still claimed (the stalled claim landed), or ended by the commit's own cleanup once the store
          // resumed (the transaction did not land): refused, nothing applied, never a second commit.
          expect(['commit_in_progress', 'lease_lost']).toContain(repeat.body.error.code);
          if (repeat.body.error.code === 'lease_lost') expect(landed).toBe(false);
        } else {
          expect(repeat.body.outcome, JSON.stringify(repeat.body)).toBe('compressed');
          expect(landed).toBe(true);
          // The stalled commit itself landed (replayed), or, when the stall hit the claim, this repeat committed.
          if (stallAt === 'TransactWriteItemsCommand') expect(repeat.body.replayed).toBe(true);
        }
        // Whatever happened, within a TTL the live session compacts again, and the parent never forks.
        await sleep(TTL);
        const live = (await stack.store.children(ref))[0]?.sessionId ?? id;
        const next = await runAgent(api, summarizingEngine(), { base: `/sessions/${live}`, mode: 'rotate', ttlMs: TTL });
        expect(next.begin.status, JSON.stringify(next.begin.body)).toBe(201);
        expect(['compressed', 'noop']).toContain(next.commit?.body.outcome);
        expect((await stack.store.children(ref)).length).toBeLessThanOrEqual(1);
      } finally {
        stack.resumeDynamo();
        fast.destroy();
      }
    },
  );
});

/** An agent in its own process: begins over HTTP, prints its attempt, then hangs as if its model ran forever. */
function agentProcess(baseUrl: string, key: string, base: string) {
  const script = `
    const r = await fetch(process.env.URL + process.env.BASE + '/compactions', {
      method: 'POST', headers: { authorization: 'Bearer ' + process.env.KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ mode: 'rotate', ttlMs: ${TTL} }) });
    console.log(JSON.stringify({ status: r.status, body: await r.json() }));
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, URL: baseUrl, KEY: key, BASE: base },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON from the wire
  const begun = new Promise<{ status: number; body: any }>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!));
    });
    child.once('exit', (code) => reject(new Error(`agent exited (${code}) before it began`)));
  });
  return { child, begun };
}

describe('an agent that dies between begin and commit', () => {
  it('E5 L6 L7 I1 S1: the agent process is SIGKILLed holding the attempt: locked until its TTL, then taken over with a newer fence; exactly one child; its commit, replayed with its token, is refused', async () => {
    const id = await session();
    const base = `/sessions/${id}`;
    const key = await stack.createApiKey(tenant);
    const agent = agentProcess(stack.service.baseUrl, key, base);
    const begun = await agent.begun;
    expect(begun.status).toBe(201);
    agent.child.kill('SIGKILL');
    counts.racesRun++;
    const engine = summarizingEngine();
    // Before its TTL: the dead agent still holds the lease.
    const early = await runAgent(api, engine, { base, mode: 'rotate', ttlMs: TTL });
    expect(early.begin.body).toMatchObject({ outcome: 'skipped', reason: 'locked' });
    expect(engine.calls).toHaveLength(0);
    await sleep(TTL + 300);
    const taker = await runAgent(api, engine, { base, mode: 'rotate', ttlMs: TTL });
    expect(taker.begin.status).toBe(201);
    expect(taker.begin.body.attempt.fence).toBeGreaterThan(begun.body.attempt.fence);
    expect(taker.commit!.body.outcome).toBe('compressed');
    const late = await api('POST', attemptPath(base, begun.body.attempt.attemptId, '/commit'), {
      headers: { 'lease-token': begun.body.attempt.leaseToken },
      body: {
        messages: [
          { role: 'user', content: 'q' },
          { role: 'assistant', content: 'FROM THE DEAD' },
        ],
      },
    });
    expect(late.status === 409 ? late.body.error.code : late.body.reason).toMatch(/^(lease_lost|adopted)$/);
    await expectOneLineage(id, taker.commit!.body.sessionId);
    expect(JSON.stringify((await api('GET', `/sessions/${taker.commit!.body.sessionId}/messages`)).body)).not.toContain('FROM THE DEAD');
    expect(await stack.lease.holderOf(sessionKey({ tenantId: tenant, sessionId: id }))).toBeNull();
    const s = await stack.store.getSession({ tenantId: tenant, sessionId: id });
    expect(s?.attempt).toBeUndefined();
  });
});
