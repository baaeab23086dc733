// Compactions held between snapshot and commit, and Redis faults, over real HTTP. The service
// runs on Redis nodes this file owns (it stops them) and summarizes with a model the test holds
// (fake-model.ts), so a real compaction can be paused after it read its snapshot.
// SPEC A6 (pop during a compaction: skipped/stale, the item never comes back), I4 (appends during a
// compaction land in its tail), F1/C2/L4 (503 lease_unavailable in the error shape with Retry-After
// when 2 of 3 nodes are down, appends unaffected; one node down still compacts).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOwnRedisNodes, type OwnRedisNodes } from '../../support/chaos/redis-nodes.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';
import { apiClient, type Api, type ApiResponse } from './api-client.js';
import { startFakeModel, type FakeModel } from './fake-model.js';
import { appendAll, createSession, readAll, turns } from './session-helpers.js';

let nodes: OwnRedisNodes;
let model: FakeModel;
let service: LocalService;
let api: Api;

beforeAll(async () => {
  [nodes, model] = await Promise.all([startOwnRedisNodes(3), startFakeModel()]);
  service = await startLocalService({
    afterTurn: false,
    env: { REDIS_URLS: nodes.urls.join(','), OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: 'held-test-model', OPENAI_API_KEY: 'sk-test' },
  });
  api = apiClient(service.baseUrl, await service.createApiKey(`held-${randomUUID().slice(0, 8)}`));
}, 120_000);

afterAll(async () => {
  await service?.stop();
  await model?.close();
  await nodes?.stop();
});

const draft = { role: 'assistant', content: 'DRAFT-TO-UNDO: the replicas should be 99' };

describe('a compaction held after its snapshot', () => {
  for (const mode of ['rotate', 'in_place'] as const) {
    it(`A6: a pop of an item the compaction read makes it skip (stale, ${mode}); the item never comes back`, async () => {
      model.hold = true;
      const id = await createSession(api);
      await appendAll(api, id, [...turns(0, 6), draft]);
      const compress = api('POST', `/sessions/${id}/compress`, { body: { mode, keepLast: 2 } });
      const held = await model.next();

      const popped = await api('DELETE', `/sessions/${id}/messages/last`);
      expect(popped.body.removed).toEqual(draft);
      held.release();
      const res = await compress;
      expect(res.body).toEqual({ outcome: 'skipped', reason: 'stale', sessionId: id, warnings: [] });

      const live = await readAll(api, id);
      expect(live).toEqual(turns(0, 6));
      const session = (await api('GET', `/sessions/${id}`)).body.session;
      expect([session.childSessionId, session.endedAt, session.messageCount]).toEqual([null, null, 12]);

      // The next compaction works on what is left: the popped item is in neither its input nor its result.
      model.hold = false;
      const again = await api('POST', `/sessions/${id}/compress`, { body: { mode, keepLast: 2 } });
      expect(again.body.outcome).toBe('compressed');
      expect(model.transcripts.at(-1)).not.toContain('DRAFT-TO-UNDO');
      expect(JSON.stringify(await readAll(api, again.body.sessionId))).not.toContain('DRAFT-TO-UNDO');
    });
  }

  it('A6: a pop of an item appended after the snapshot does not stop the compaction, and the item is gone', async () => {
    model.hold = true;
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 6));
    const compress = api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
    const held = await model.next();
    await appendAll(api, id, [draft]);
    expect((await api('DELETE', `/sessions/${id}/messages/last`)).body.removed).toEqual(draft);
    held.release();
    const res = await compress;
    expect(res.body.outcome).toBe('compressed');
    expect(JSON.stringify(await readAll(api, res.body.sessionId))).not.toContain('DRAFT-TO-UNDO');
  });

  it('I4: appends that land while the compaction runs are carried verbatim into its result, after the compacted items', async () => {
    model.hold = true;
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 6));
    const compress = api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
    const held = await model.next();
    const during = [...turns(100, 2), { role: 'user', content: 'appended while compacting' }];
    for (const item of during) expect((await api('POST', `/sessions/${id}/messages`, { body: { messages: [item] } })).status).toBe(200);
    held.release('Key facts:\n- six rounds of widget questions');
    const res = await compress;
    expect(res.body.outcome).toBe('compressed');
    const live = await readAll(api, res.body.sessionId);
    expect(live).toEqual(res.body.messages);
    // The compacted part ends with the snapshot's last 2 items; the concurrent tail follows them.
    expect(live.slice(-(2 + during.length))).toEqual([...turns(5, 1), ...during]);
    expect(live.filter((m) => typeof m.content === 'string' && m.content.startsWith('[CONTEXT COMPACTION]'))).toHaveLength(1);
  });
});

describe('the lease backend down (Redis nodes stopped)', () => {
  const expectLeaseUnavailable = (res: ApiResponse) => {
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: { code: 'lease_unavailable', message: expect.any(String), requestId: expect.any(String) } });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  };

  it('L4: one of three nodes down: a compaction still takes the lease and commits', async () => {
    model.hold = false;
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 6));
    await nodes.kill(0);
    try {
      const res = await api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
      expect(res.body.outcome).toBe('compressed');
    } finally {
      await nodes.restart(0);
    }
  });

  it('F1/C2/L4/I4: two of three nodes down: compress is 503 lease_unavailable (error shape, Retry-After), nothing changes, appends still land', async () => {
    model.hold = false;
    const id = await createSession(api);
    await appendAll(api, id, turns(0, 6));
    const before = model.transcripts.length;
    await Promise.all([nodes.kill(1), nodes.kill(2)]);
    try {
      for (const mode of ['rotate', 'in_place']) expectLeaseUnavailable(await api('POST', `/sessions/${id}/compress`, { body: { mode } }));
      // Fail closed: the engine was never called and the session is as it was.
      expect(model.transcripts.length).toBe(before);
      const session = (await api('GET', `/sessions/${id}`)).body.session;
      expect([session.childSessionId, session.messageCount, session.lastActivity]).toEqual([null, 12, null]);
      // Appends are not blocked by the lease (I4).
      await appendAll(api, id, turns(6, 1));
      expect(await readAll(api, id)).toEqual(turns(0, 7));
    } finally {
      await Promise.all([nodes.restart(1), nodes.restart(2)]);
    }
    // Once the nodes are back the service's clients rejoin them and the same request compacts.
    await expect
      .poll(async () => (await api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } })).body.outcome, {
        timeout: 30_000,
        interval: 500,
      })
      .toBe('compressed');
  });
});
