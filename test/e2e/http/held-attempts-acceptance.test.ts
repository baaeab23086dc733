// Acceptance of held compaction attempts (issue 29, SPEC E1-E8) over real HTTP: the seed's
// scenarios played by agents with their own engines (test/support/held-agent.ts, raw fetch, no
// client package). Every answer is also checked against functions/openapi.json (api-client.ts).
//
// Target: serverless-offline on the suite's stack (default), or a running `npm start`:
//   HELD_ACCEPTANCE_URL=http://127.0.0.1:3000 \
//   HELD_ACCEPTANCE_KEYS="$(npm run -s cli -- keys create --tenant a1),$(npm run -s cli -- keys create --tenant a2)" \
//   npx vitest run --config test/vitest.config.ts test/e2e/http/held-attempts-acceptance.test.ts
// Everything it checks is read back over HTTP, so it needs nothing but the two keys.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalService, type LocalService } from '../../support/local-service.js';
import { attemptPath, runAgent, sleep, summarizingEngine, type AgentRun } from '../../support/held-agent.js';
import { apiClient, type Api } from './api-client.js';
import { appendAll, createSession, readAll, turns } from './session-helpers.js';

let service: LocalService | undefined;
let api: Api;
let other: Api;
/** The shortest lease a begin may ask for (E1: ttlMs 5000..900000). */
const TTL = 5000;

beforeAll(async () => {
  const url = process.env.HELD_ACCEPTANCE_URL;
  if (url) {
    const [k1, k2] = (process.env.HELD_ACCEPTANCE_KEYS ?? '').split(',');
    if (!k1 || !k2) throw new Error('HELD_ACCEPTANCE_KEYS must name two API keys of two tenants');
    api = apiClient(url, k1);
    other = apiClient(url, k2);
    return;
  }
  service = await startLocalService({ afterTurn: false });
  const tenant = `accept-${randomUUID().slice(0, 8)}`;
  const [k1, k2] = await Promise.all([service.createApiKey(tenant), service.createApiKey(`${tenant}-other`)]);
  api = apiClient(service.baseUrl, k1);
  other = apiClient(service.baseUrl, k2);
}, 180_000);
afterAll(async () => {
  await service?.stop();
});

async function conversationWith(n: number): Promise<{ id: string; base: string }> {
  const id = `accept-${randomUUID().slice(0, 12)}`;
  expect((await api('PUT', `/conversations/${id}`, { body: {} })).status).toBe(201);
  const r = await api('POST', `/conversations/${id}/messages`, { body: { messages: turns(0, n / 2) } });
  expect(r.status).toBe(200);
  return { id, base: `/conversations/${id}` };
}

async function sessionWith(n: number): Promise<{ id: string; base: string }> {
  const id = await createSession(api);
  await appendAll(api, id, turns(0, n / 2));
  return { id, base: `/sessions/${id}` };
}

async function sessionOf(id: string) {
  const r = await api('GET', `/sessions/${id}`);
  expect(r.status).toBe(200);
  return r.body.session;
}

/** The chain's sessions root → tip (I1: a rotation adds exactly one). */
async function chainOf(sessionId: string): Promise<string[]> {
  const r = await api('GET', `/sessions/${sessionId}/lineage`);
  expect(r.status).toBe(200);
  return r.body.chain.map((s: { sessionId: string }) => s.sessionId);
}

const started = (r: AgentRun) => r.begin.status === 201;
const tokenOf = (r: AgentRun): string => r.begin.body.attempt.leaseToken;

describe('held attempts: agents with their own engines over HTTP (issue 29 acceptance)', () => {
  it.each(['conversation', 'session'] as const)(
    'E1 I1 I2 C1 C6: eight concurrent agents on one %s: one is started, the others are told locked and never run their engine; one child, named by the one commit',
    async (form) => {
      const target = form === 'conversation' ? await conversationWith(12) : await sessionWith(12);
      const engines = Array.from({ length: 8 }, () => summarizingEngine(() => sleep(300)));
      const runs = await Promise.all(engines.map((e) => runAgent(api, e, { base: target.base, mode: 'rotate' })));
      const winners = runs.filter(started);
      expect(winners).toHaveLength(1);
      for (const [i, r] of runs.entries()) {
        if (started(r)) continue;
        expect(r.begin.status).toBe(200);
        expect(r.begin.body).toMatchObject({ outcome: 'skipped', reason: 'locked' });
        // C1/P2: a loser is answered from the lease decision: no transcript, no token.
        expect(r.begin.body).not.toHaveProperty('messages');
        expect(JSON.stringify(r.begin.body)).not.toContain(tokenOf(winners[0]!));
        expect(engines[i]!.calls).toHaveLength(0);
      }
      expect(engines.reduce((n, e) => n + e.calls.length, 0)).toBe(1);
      const commit = winners[0]!.commit!;
      expect(commit.body).toMatchObject({ outcome: 'compressed', mode: 'rotate' });
      const root = winners[0]!.begin.body.attempt.sessionId as string;
      expect(await chainOf(root)).toEqual([root, commit.body.sessionId]);
      expect((await sessionOf(root)).childSessionId).toBe(commit.body.sessionId);
      // I3: the lease was released with the commit; the child can be compacted at once.
      const next = await runAgent(api, summarizingEngine(), { base: target.base, mode: 'rotate' });
      if (form === 'conversation') expect(next.commit?.body.outcome).toBe('compressed');
      else expect(next.begin.body).toMatchObject({ outcome: 'skipped', reason: 'adopted', sessionId: commit.body.sessionId });
    },
  );

  it.concurrent(
    'E2 L7 L3: heartbeats keep the lease past its TTL: a rival begins at 1.5 TTL and is told locked, and the holder commits',
    async () => {
      const target = await conversationWith(10);
      let rival: AgentRun | undefined;
      const rivalEngine = summarizingEngine();
      const engine = summarizingEngine(async () => {
        await sleep(TTL * 1.5);
        rival = await runAgent(api, rivalEngine, { base: target.base, mode: 'rotate', ttlMs: TTL });
      });
      const holder = await runAgent(api, engine, { base: target.base, mode: 'rotate', ttlMs: TTL });
      expect(holder.begin.status).toBe(201);
      expect(holder.heartbeats.length).toBeGreaterThanOrEqual(2);
      for (const hb of holder.heartbeats) expect([hb.status, hb.body.attempt.status]).toEqual([200, 'running']);
      const last = holder.heartbeats.at(-1)!.body.attempt.expiresAt as string;
      expect(Date.parse(last)).toBeGreaterThan(Date.parse(holder.begin.body.attempt.expiresAt));
      expect(rival!.begin.body).toMatchObject({ outcome: 'skipped', reason: 'locked' });
      expect(rivalEngine.calls).toHaveLength(0);
      expect(holder.commit!.body.outcome).toBe('compressed');
      const root = holder.begin.body.attempt.sessionId as string;
      expect(await chainOf(root)).toHaveLength(2);
    },
    60_000,
  );

  it.concurrent.each(['before', 'after'] as const)(
    'E5 L6 I1: a paused holder (no heartbeat) is taken over after its TTL with a newer fence; its late commit (%s the new holder commits) never lands; one child',
    async (when) => {
      const target = await sessionWith(10);
      const paused = await runAgentUntilEngine(target.base);
      await sleep(TTL + 500);
      const taker = await runAgentUntilEngine(target.base);
      expect(taker.begin.status, JSON.stringify(taker.begin.body)).toBe(201);
      expect(taker.begin.body.attempt.fence).toBeGreaterThan(paused.begin.body.attempt.fence);
      const lateCommit = () =>
        api('POST', attemptPath(target.base, paused.begin.body.attempt.attemptId, '/commit'), {
          headers: { 'lease-token': tokenOf(paused) },
          body: {
            messages: [
              { role: 'user', content: 'LATE paused summary' },
              { role: 'assistant', content: 'LATE' },
            ],
          },
        });
      let late = when === 'before' ? await lateCommit() : undefined;
      const won = await api('POST', attemptPath(target.base, taker.begin.body.attempt.attemptId, '/commit'), {
        headers: { 'lease-token': tokenOf(taker) },
        body: {
          messages: [
            { role: 'user', content: 'taker summary' },
            { role: 'assistant', content: 'TAKER' },
          ],
        },
      });
      late ??= await lateCommit();
      expect(won.body).toMatchObject({ outcome: 'compressed', mode: 'rotate' });
      // L6: refused, by the fence or the lease, with nothing written.
      if (late.status === 409) expect(late.body.error.code).toBe('lease_lost');
      else expect(late.body).toMatchObject({ outcome: 'skipped', reason: expect.stringMatching(/^(lease_lost|adopted)$/) });
      expect(await chainOf(target.id)).toEqual([target.id, won.body.sessionId]);
      expect(JSON.stringify(await readAll(api, won.body.sessionId))).not.toContain('LATE');
      // E2: the paused holder's heartbeat is refused too; its status says lost.
      const hb = await api('POST', attemptPath(target.base, paused.begin.body.attempt.attemptId, '/heartbeat'), {
        headers: { 'lease-token': tokenOf(paused) },
      });
      expect(hb.status).toBe(409);
      const status = await api('GET', attemptPath(target.base, paused.begin.body.attempt.attemptId));
      expect(status.body.attempt.status).toMatch(/^(lost|expired)$/);
    },
    60_000,
  );

  it('E4 I3 C9: abort releases the lease token-checked: the next agent begins at once; nothing else was written; a commit after it applies nothing', async () => {
    const target = await sessionWith(8);
    const failing = await runAgent(
      api,
      async () => {
        throw new Error('the agent model failed');
      },
      { base: target.base, mode: 'rotate', ttlMs: 60_000 },
    );
    expect(failing.error).toBeInstanceOf(Error);
    expect(failing.abort).toMatchObject({ status: 200, body: { outcome: 'skipped', reason: 'cancelled', sessionId: target.id } });
    const s = await sessionOf(target.id);
    expect([s.childSessionId, s.endedAt, s.messageCount, s.lastActivity?.label]).toEqual([null, null, 8, 'compaction failed']);
    const late = await api('POST', attemptPath(target.base, failing.begin.body.attempt.attemptId, '/commit'), {
      headers: { 'lease-token': tokenOf(failing) },
      body: { messages: [{ role: 'user', content: 'late' }] },
    });
    expect(late.body).toMatchObject({ outcome: 'skipped', reason: 'cancelled' });
    // The lease is free well before its 60 s TTL.
    const next = await runAgent(api, summarizingEngine(), { base: target.base, mode: 'rotate' });
    expect(next.commit?.body.outcome).toBe('compressed');
    expect(await chainOf(target.id)).toHaveLength(2);
    // E4: an abort after the commit reports it.
    const after = await api('DELETE', attemptPath(target.base, next.begin.body.attempt.attemptId), {
      headers: { 'lease-token': tokenOf(next) },
    });
    expect([after.status, after.body.error.code]).toEqual([409, 'committed']);
  });

  it('E3 I2: a repeated commit (its answer lost) answers the first outcome again and applies nothing twice; two commits at once make one child', async () => {
    for (const racing of [false, true]) {
      const target = await sessionWith(8);
      const begin = await api('POST', `${target.base}/compactions`, { body: { mode: 'rotate' } });
      const path = attemptPath(target.base, begin.body.attempt.attemptId, '/commit');
      const send = () =>
        api('POST', path, {
          headers: { 'lease-token': begin.body.attempt.leaseToken },
          body: {
            messages: [
              { role: 'user', content: 'q' },
              { role: 'assistant', content: 'SUMMARY' },
            ],
          },
        });
      const answers = racing ? await Promise.all([send(), send(), send()]) : [await send(), await send(), await send()];
      const compressed = answers.filter((a) => a.status === 200 && a.body.outcome === 'compressed');
      const children = new Set(compressed.map((a) => a.body.sessionId));
      expect(children.size).toBe(1);
      // The others replay it, or (racing) were told the commit was in progress.
      for (const a of answers) {
        if (a.status === 409) expect(racing && a.body.error.code === 'commit_in_progress').toBe(true);
        else expect(a.body.outcome).toBe('compressed');
      }
      expect(answers.filter((a) => a.body.replayed === true).length).toBeGreaterThanOrEqual(racing ? 0 : 2);
      expect(await chainOf(target.id)).toEqual([target.id, ...children]);
      const again = await send();
      expect(again.body).toMatchObject({ outcome: 'compressed', sessionId: [...children][0], replayed: true });
    }
  });

  it.each(['rotate', 'in_place'] as const)(
    'E3 I4 K2: items appended (by another process) while the agent summarizes are carried after its replacement (%s)',
    async (mode) => {
      const target = await conversationWith(10);
      const during = [
        { role: 'user', content: 'appended during the summary 1' },
        { role: 'assistant', content: 'appended during the summary 2' },
      ];
      const engine = summarizingEngine(async () => {
        for (const m of during) expect((await api('POST', `${target.base}/messages`, { body: { messages: [m] } })).status).toBe(200);
      });
      const run = await runAgent(api, engine, { base: target.base, mode });
      expect(run.commit!.body).toMatchObject({ outcome: 'compressed', mode });
      const replacement = engine.outputs[0]!;
      const live = await api('GET', `${target.base}/messages`);
      expect(live.body.messages).toEqual([...replacement, ...during]);
      expect(run.commit!.body.messages).toEqual([...replacement, ...during]);
    },
  );

  it('E3 A6: a pop of a snapshotted item makes the commit skip (stale): nothing written, the popped item never comes back, the lease is free', async () => {
    const target = await conversationWith(10);
    const draft = { role: 'assistant', content: 'DRAFT-TO-UNDO' };
    expect((await api('POST', `${target.base}/messages`, { body: { messages: [draft] } })).status).toBe(200);
    const engine = summarizingEngine(async () => {
      expect((await api('DELETE', `${target.base}/messages/last`)).body.removed).toEqual(draft);
    });
    const run = await runAgent(api, async (input) => [...(await engine(input)), draft], { base: target.base, mode: 'rotate' });
    expect(run.commit!.body).toMatchObject({ outcome: 'skipped', reason: 'stale' });
    const root = run.begin.body.attempt.sessionId as string;
    expect(await chainOf(root)).toEqual([root]);
    expect(await readAll(api, root)).toEqual(turns(0, 5));
    const next = await runAgent(api, summarizingEngine(), { base: target.base, mode: 'rotate' });
    expect(next.commit!.body.outcome).toBe('compressed');
    expect(JSON.stringify(await readAll(api, next.commit!.body.sessionId))).not.toContain('DRAFT-TO-UNDO');
  });

  it.each([
    ['empty_result', () => []],
    ['unchanged', (m: unknown[]) => m],
    ['grown', (m: unknown[]) => [...m, { role: 'assistant', content: 'and more' }]],
  ] as const)('E3 C7: a replacement that is %s writes nothing, answers noop with its reason and frees the lease', async (reason, make) => {
    const target = await sessionWith(8);
    const run = await runAgent(api, async ({ messages }) => make(messages), { base: target.base, mode: 'rotate' });
    expect(run.commit!.body).toMatchObject({ outcome: 'noop', reason });
    const s = await sessionOf(target.id);
    expect([s.childSessionId, s.endedAt, s.messageCount]).toEqual([null, null, 8]);
    expect(await readAll(api, target.id)).toEqual(turns(0, 4));
    expect((await api('POST', `${target.base}/compactions`, { body: { ttlMs: TTL } })).status).toBe(201);
  });

  it('E3 C8: a replacement with no real user turn gets the last one back; a user-role summary is not an anchor', async () => {
    const target = await sessionWith(8);
    const run = await runAgent(
      api,
      async () => [
        { role: 'user', content: '[CONTEXT COMPACTION] the summary, as a user message' },
        { role: 'assistant', content: 'ok' },
      ],
      { base: target.base, mode: 'in_place' },
    );
    expect(run.commit!.body.outcome).toBe('compressed');
    const items = await readAll(api, target.id);
    expect(items.filter((m) => m.role === 'user' && typeof m.content === 'string' && m.content.startsWith('Question 3'))).toHaveLength(1);
    for (let i = 1; i < items.length; i++) expect([items[i - 1]!.role, items[i]!.role]).not.toEqual(['user', 'user']);
  });

  it('E1 C13: origin review is disabled: no lease taken, the engine never runs', async () => {
    const target = await conversationWith(8);
    const engine = summarizingEngine();
    const review = await runAgent(api, engine, { base: target.base, origin: 'review' });
    expect(review.begin).toMatchObject({ status: 200, body: { outcome: 'disabled', reason: 'review_origin' } });
    expect(engine.calls).toHaveLength(0);
    const next = await runAgent(api, summarizingEngine(), { base: target.base });
    expect(next.commit!.body.outcome).toBe('compressed');
  });

  it('E6: the service engine meets a held attempt as locked, and nothing is written under it', async () => {
    const target = await conversationWith(8);
    const begin = await api('POST', `${target.base}/compactions`, { body: { mode: 'rotate' } });
    const compress = await api('POST', `${target.base}/compress`, { body: { mode: 'rotate' } });
    expect(compress.body).toMatchObject({ outcome: 'skipped', reason: 'locked' });
    expect(await chainOf(begin.body.attempt.sessionId)).toHaveLength(1);
    await api('DELETE', attemptPath(target.base, begin.body.attempt.attemptId), {
      headers: { 'lease-token': begin.body.attempt.leaseToken },
    });
  });

  it('E8 F2: wrong and missing tokens change nothing; another tenant and unknown attempts get 404 on every route; the token is never answered again', async () => {
    const target = await sessionWith(8);
    const begin = await api('POST', `${target.base}/compactions`, { body: { mode: 'rotate' } });
    const { attemptId, leaseToken } = begin.body.attempt;
    const body = {
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: 'S' },
      ],
    };
    const routes = [
      ['POST', attemptPath(target.base, attemptId, '/commit'), body],
      ['POST', attemptPath(target.base, attemptId, '/heartbeat'), undefined],
      ['DELETE', attemptPath(target.base, attemptId), undefined],
    ] as const;
    for (const [method, path, b] of routes) {
      const wrong = await api(method, path, { headers: { 'lease-token': `${leaseToken}x` }, ...(b ? { body: b } : {}) });
      expect([wrong.status, wrong.body.error.code]).toEqual([403, 'lease_token_invalid']);
      const missing = await api(method, path, b ? { body: b } : {});
      expect([missing.status, missing.body.error.code]).toEqual([401, 'lease_token_invalid']);
      const foreign = await other(method, path, { headers: { 'lease-token': leaseToken }, ...(b ? { body: b } : {}) });
      expect(foreign.status).toBe(404);
    }
    expect((await other('GET', attemptPath(target.base, attemptId))).status).toBe(404);
    // Unknown, garbled and another session's attempt ids.
    const elsewhere = await sessionWith(4);
    for (const bad of ['AAAA', 'not-an-attempt', Buffer.from('[1,2,3]').toString('base64url')]) {
      expect((await api('GET', attemptPath(target.base, bad))).status).toBe(404);
      expect((await api('POST', attemptPath(target.base, bad, '/commit'), { headers: { 'lease-token': leaseToken }, body })).status).toBe(
        404,
      );
    }
    expect((await api('GET', attemptPath(elsewhere.base, attemptId))).status).toBe(404);
    const status = await api('GET', attemptPath(target.base, attemptId));
    expect(status.body.attempt.status).toBe('running');
    expect(JSON.stringify(status.body)).not.toContain(leaseToken);
    // Nothing changed: the agent still holds it and commits with the right token.
    const s = await sessionOf(target.id);
    expect([s.childSessionId, s.messageCount]).toEqual([null, 8]);
    const ok = await api('POST', attemptPath(target.base, attemptId, '/commit'), { headers: { 'lease-token': leaseToken }, body });
    expect(ok.body.outcome).toBe('compressed');
    expect(JSON.stringify(ok.body)).not.toContain(leaseToken);
  });

  it('E7: a malformed replacement is 400 naming messages[i] and leaves the attempt running; a Responses compaction item is kept verbatim', async () => {
    const id = await createSession(api, { format: 'responses' });
    const items = [
      { type: 'message', role: 'user', content: 'please refactor the parser' },
      ...Array.from({ length: 6 }, (_, i) => ({ type: 'message', role: 'assistant', content: `step ${i}: ${'done '.repeat(40)}` })),
    ];
    expect((await api('POST', `/sessions/${id}/messages`, { body: { messages: items } })).status).toBe(200);
    const compaction = { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAA-opaque', extra: { kept: [1, 'two'] } };
    const begin = await api('POST', `/sessions/${id}/compactions`, { body: {} });
    const headers = { 'lease-token': begin.body.attempt.leaseToken as string };
    const commit = attemptPath(`/sessions/${id}`, begin.body.attempt.attemptId, '/commit');
    const bad = await api('POST', commit, { headers, body: { messages: [items[0], { type: 'message', role: 7 }] } });
    expect([bad.status, bad.body.field]).toEqual([400, expect.stringMatching(/^messages\[1\]/)]);
    // A7: one item over 4,000,000 bytes is 413 naming it; nothing written either.
    const huge = { type: 'message', role: 'assistant', content: 'x'.repeat(4_000_100) };
    const tooLarge = await api('POST', commit, { headers, body: { messages: [items[0], huge] } });
    expect(tooLarge.status).toBe(413);
    expect(JSON.stringify(tooLarge.body.error)).toContain('messages[1]');
    expect((await api('GET', attemptPath(`/sessions/${id}`, begin.body.attempt.attemptId))).body.attempt.status).toBe('running');
    const ok = await api('POST', commit, { headers, body: { messages: [items[0], compaction] } });
    expect(ok.body.outcome).toBe('compressed');
    expect(await readAll(api, id)).toEqual([items[0], compaction]);
  });
});

/** Begins and returns as soon as the agent holds the attempt (the agent then pauses: no heartbeat, no commit). */
async function runAgentUntilEngine(base: string): Promise<AgentRun> {
  const begin = await api('POST', `${base}/compactions`, { body: { mode: 'rotate', ttlMs: TTL } });
  return { begin, engineCalls: 0, heartbeats: [] };
}
