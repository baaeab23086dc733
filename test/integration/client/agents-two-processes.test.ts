// Two LineageSessions on one conversation, in two processes, over real HTTP: one runs Agents
// SDK turns with tool calls, the other compacts (rotate, then in place) while they run, adding
// a note after each. Afterwards the chain is linear with one child at most per session (I1),
// every item either process added is accounted for exactly once (I4, A3), and both processes
// still name the conversation they started on and the same live tip (K1, K2).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { createDynamoClient } from '../../../lib/aws-clients.js';
import { LineageClient, type CompressResponse } from '../../../lib/client/index.js';
import { buildLineageChild, startLineageChild, type Child } from '../../support/client/children.js';
import type { ChildLine } from '../../support/client/lineage-child.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';

let service: LocalService;

beforeAll(async () => {
  // The only compactions are the compactor's: no after-turn ones.
  [service] = await Promise.all([startLocalService({ afterTurn: false }), buildLineageChild()]);
});

afterAll(async () => {
  await service?.stop();
});

/** Items compare as JSON with sorted keys (the service returns what was appended, SPEC A1). */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : x,
  );
}

type Added = Extract<ChildLine, { kind: 'added' }> & { writer: string };

describe('LineageSession in two processes', () => {
  it('I1/I4/A3: agent turns in one process, rotate then in-place compaction in another: a linear chain, every item once, one tip', async () => {
    const tenant = `two-${randomUUID().slice(0, 8)}`;
    const apiKey = await service.createApiKey(tenant);
    const client = new LineageClient({ baseUrl: service.baseUrl, apiKey });
    // Neither process creates it beforehand: both start on the id at once, and one conversation results (K1).
    const conversationId = `two-processes-${randomUUID().slice(0, 8)}`;
    const common = { LINEAGE_BASE_URL: service.baseUrl, LINEAGE_API_KEY: apiKey, CONVERSATION_ID: conversationId };

    const children: Child[] = [];
    try {
      const agent = startLineageChild({ ...common, ROLE: 'agent', TAG: 'A', TURNS: '10' });
      const compactor = startLineageChild({ ...common, ROLE: 'compactor', TAG: 'B', ROTATE_AT: '8', IN_PLACE_AFTER: '8' });
      children.push(agent, compactor);
      // The agent goes on until two turns after the compactor is done, so both compactions fall inside its turns.
      await compactor.next('done', 180_000);
      agent.send('finish');
      await agent.next('done', 180_000);
      for (const c of children) c.send('report');
      const reports = await Promise.all(children.map((c) => c.next('report')));
      expect(await Promise.all(children.map((c) => c.exited))).toEqual([0, 0]);

      // --- the chain (I1)
      const root = (await client.getConversation(conversationId)).rootSessionId;
      const { chain, tip } = await client.conversationLineage(conversationId);
      expect(chain.map((s) => s.sessionId)[0]).toBe(root);
      expect(chain).toHaveLength(2);
      const [parent, live] = chain as [(typeof chain)[0], (typeof chain)[0]];
      expect(parent).toMatchObject({ childSessionId: live.sessionId, endReason: 'compression' });
      expect(live).toMatchObject({ parentSessionId: root, childSessionId: null, endedAt: null });
      expect(tip).toBe(live.sessionId);
      const ddb = createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT!, maxAttempts: 3 });
      try {
        const store = new DynamoLineageStore({ client: ddb, tableName: process.env.TABLE_NAME! });
        for (const s of chain) expect((await store.children({ tenantId: tenant, sessionId: s.sessionId })).length).toBeLessThanOrEqual(1);
      } finally {
        ddb.destroy();
      }

      // --- both processes keep the conversation's id and name the same live tip
      expect(reports.map((r) => r.conversationId)).toEqual([conversationId, conversationId]);
      expect(reports.map((r) => r.liveSessionId)).toEqual([tip, tip]);

      // --- both compactions happened while the agent's turns ran
      const [rotation, inPlace] = compactor.lines.filter((l): l is Extract<ChildLine, { kind: 'compacted' }> => l.kind === 'compacted');
      const rotated = rotation!.response as CompressResponse;
      const compactedInPlace = inPlace!.response as CompressResponse;
      expect(rotated).toMatchObject({ outcome: 'compressed', mode: 'rotate', previousSessionId: root, sessionId: live.sessionId });
      expect(compactedInPlace).toMatchObject({ outcome: 'compressed', mode: 'in_place', sessionId: live.sessionId });
      const added: Added[] = children.flatMap((c, i) =>
        c.lines.filter((l) => l.kind === 'added').map((l) => ({ ...l, writer: i === 0 ? 'A' : 'B' })),
      );
      const agentAdds = added.filter((a) => a.writer === 'A');
      expect(
        agentAdds.some((a) => a.t0 > inPlace!.t1),
        'the agent was still adding after the in-place compaction',
      ).toBe(true);
      expect(
        agentAdds.some((a) => a.t1 < rotation!.t0),
        'the agent had added before the rotation',
      ).toBe(true);
      // Tool calls went through the service: every call has its result in what the agent added.
      const agentItems = agentAdds.flatMap((a) => a.items) as Record<string, unknown>[];
      const calls = agentItems.filter((i) => i.type === 'function_call').map((i) => i.callId);
      expect(calls.length).toBeGreaterThanOrEqual(10);
      expect(agentItems.filter((i) => i.type === 'function_call_result').map((i) => i.callId)).toEqual(calls);

      const parentItems = (await client.readAll(root)).map(canonical);
      const liveItems = (await client.readAll(live.sessionId)).map(canonical);
      const occurrences = (items: string[], key: string) => items.filter((x) => x === key).length;

      // --- I4 for the rotation: the child carried the parent's last items verbatim, in order
      const carried = (rotated.messages ?? []).map(canonical);
      const ownKeys = new Set(added.flatMap((a) => a.items.map(canonical)));
      const afterSummary = carried.slice(carried.findLastIndex((k) => !ownKeys.has(k)) + 1);
      expect(afterSummary.length).toBeGreaterThan(0);
      expect(afterSummary).toEqual(parentItems.slice(-afterSummary.length));

      // --- I4 for the in-place compaction: its result is the start of the live transcript, and
      // everything appended after it follows, verbatim
      const compacted = (compactedInPlace.messages ?? []).map(canonical);
      expect(liveItems.slice(0, compacted.length)).toEqual(compacted);

      // --- every item added, accounted for exactly once
      for (const a of added) {
        for (const item of a.items) {
          const key = canonical(item);
          const where = `${a.writer} item ${key.slice(0, 120)} (landed on ${a.sessionId === root ? 'the parent' : 'the live session'})`;
          if (a.sessionId === root) {
            // Appended before the rotation: in the ended parent's transcript once; in the live one
            // only as the rotation carried it (never a second append).
            expect(occurrences(parentItems, key), where).toBe(1);
            expect(occurrences(liveItems, key), where).toBeLessThanOrEqual(carried.includes(key) ? 1 : 0);
            expect(a.t0, `${where}: began after the rotation answered`).toBeLessThan(rotation!.t1);
          } else {
            expect(a.sessionId, where).toBe(live.sessionId);
            expect(occurrences(parentItems, key), where).toBe(0);
            expect(occurrences(liveItems, key), where).toBeLessThanOrEqual(1);
            // Only the in-place compaction may have summarized it, so it was appended before that answered.
            if (occurrences(liveItems, key) === 0)
              expect(a.t1, `${where}: missing though appended after the in-place compaction`).toBeLessThan(inPlace!.t1);
            if (a.t0 > inPlace!.t1) expect(occurrences(liveItems.slice(compacted.length), key), where).toBe(1);
          }
        }
      }
      // A summarized item is never followed by one of the same writer kept verbatim before it:
      // what survives of each writer on the live session is the newest part of what it added there.
      for (const writer of ['A', 'B']) {
        const present = added
          .filter((a) => a.writer === writer && a.sessionId === live.sessionId)
          .flatMap((a) => a.items.map(canonical))
          .map((k) => occurrences(liveItems, k) === 1);
        const firstKept = present.indexOf(true);
        expect(present.slice(firstKept === -1 ? present.length : firstKept).every(Boolean), `${writer}: ${present.join(',')}`).toBe(true);
      }
      // Nothing in the live transcript came from anywhere but the writers, except the one summary
      // (the in-place compaction's, which absorbed the rotation's).
      expect(liveItems.filter((k) => !ownKeys.has(k))).toHaveLength(1);
    } finally {
      for (const c of children) c.kill();
    }
  }, 240_000);
});
