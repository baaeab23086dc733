// Agents' items over real HTTP (SPEC A1, A2, A5, issue 11 item 3): real agent transcripts of both
// formats round-trip deep-equal through appends, paged reads and tail reads; a malformed item
// is a 400 naming its index and field; compactions of both formats never leave a tool call
// without its result (or a result without its call); a 380 KB single-run message is counted and
// compacted within the request.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adapterFor } from '../../../lib/items/adapters.js';
import { pairCalls } from '../../../lib/items/pairing.js';
import type { Item, ItemFormat } from '../../../lib/items/types.js';
import {
  agentsSdkPendingCall,
  allFixtures,
  chatWithBigArguments,
  longChatTranscript,
  longResponsesTranscript,
  responsesWithBigArguments,
  singleRunText,
} from '../../fixtures/transcripts/index.js';
import { startLocalService, type LocalService } from '../../support/local-service.js';
import { apiClient, type Api } from './api-client.js';
import { appendAll, createSession, readAll, readPages, turns } from './session-helpers.js';

let service: LocalService;
let api: Api;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  api = apiClient(service.baseUrl, await service.createApiKey(`items-${randomUUID().slice(0, 8)}`));
});

afterAll(async () => {
  await service?.stop();
});

/** Tool calls without their result and results without their call, as the format pairs them (A2). */
function dangling(format: ItemFormat, items: readonly Item[]): { unanswered: string[]; orphans: string[] } {
  const p = pairCalls(items, adapterFor(format));
  return { unanswered: p.unansweredCallIds, orphans: p.orphanResultIds };
}

/** The smallest keepLast (3+) whose naive cut `n - keepLast` would separate a call from its result. */
function splittingKeepLast(format: ItemFormat, items: readonly Item[]): number {
  const pairing = pairCalls(items, adapterFor(format));
  const k = Array.from({ length: 20 }, (_, i) => i + 3).find((n) => !pairing.isSafeCut(items.length - n));
  expect(k).toBeDefined();
  return k!;
}

describe('A1: real agent transcripts round-trip deep-equal', () => {
  for (const fixture of allFixtures) {
    it(`A1/A5: ${fixture.name}: appended in two requests and one by one, read back whole, in pages of 2, and as a tail`, async () => {
      const id = await createSession(api, { format: fixture.format });
      const half = Math.ceil(fixture.items.length / 2);
      const first = await api('POST', `/sessions/${id}/messages`, { body: { messages: fixture.items.slice(0, half) } });
      expect(first.body).toMatchObject({ appended: half, session: { format: fixture.format, messageCount: half } });
      // The Agents SDK's addItems appends as the run goes: one item per request.
      for (const item of fixture.items.slice(half))
        expect((await api('POST', `/sessions/${id}/messages`, { body: { messages: [item] } })).status).toBe(200);

      expect(await readAll(api, id)).toEqual(fixture.items);
      const paged = await readPages(api, id, 2);
      expect(paged.items).toEqual(fixture.items);
      expect(paged.pages).toBe(Math.ceil(fixture.items.length / 2));
      const tail = await api('GET', `/sessions/${id}/messages?tail=3`);
      expect(tail.body.messages).toEqual(fixture.items.slice(-3));
      expect((await api('GET', `/sessions/${id}`)).body.session).toMatchObject({
        format: fixture.format,
        messageCount: fixture.items.length,
      });
    });
  }

  it('A1: ~100 KB tool arguments in both formats round-trip byte for byte', async () => {
    for (const [format, items] of [
      ['chat', chatWithBigArguments(100_000)],
      ['responses', responsesWithBigArguments(100_000)],
    ] as const) {
      const id = await createSession(api, { format });
      await appendAll(api, id, items);
      const back = await readAll(api, id);
      expect(JSON.stringify(back)).toBe(JSON.stringify(items));
    }
  });

  it('A1: the format is fixed per session: a responses item in a chat session is a 400, and nothing is written', async () => {
    const id = await createSession(api, { format: 'chat' });
    const res = await api('POST', `/sessions/${id}/messages`, {
      body: {
        messages: [
          { role: 'user', content: 'ok' },
          { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        ],
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.field).toBe('messages[1].role');
    expect(await readAll(api, id)).toEqual([]);
  });

  it('A1/F1: a malformed item is a 400 naming its index and field, in both formats', async () => {
    const chat = await createSession(api, { format: 'chat' });
    const cases: [string, unknown[], string][] = [
      [
        chat,
        [
          { role: 'user', content: 'ok' },
          { role: 'robot', content: 'x' },
        ],
        'messages[1].role',
      ],
      [
        chat,
        [
          { role: 'user', content: 'ok' },
          { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] },
        ],
        'messages[1].tool_calls[0].id',
      ],
      [chat, [{ role: 'tool', content: 'r' }], 'messages[0].tool_call_id'],
      [chat, [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }], 'messages[0].content[0].image_url.url'],
    ];
    const responses = await createSession(api, { format: 'responses' });
    cases.push(
      [
        responses,
        [
          { role: 'user', content: 'ok' },
          { type: 'function_call', name: 'f', arguments: '{}' },
        ],
        'messages[1].call_id',
      ],
      [responses, [{ type: 'function_call_output', call_id: 'c1' }], 'messages[0].output'],
      [responses, [{ id: 'x' }], 'messages[0].type'],
    );
    for (const [id, messages, field] of cases) {
      const res = await api('POST', `/sessions/${id}/messages`, { body: { messages } });
      expect([res.status, res.body.error.code, res.body.field], JSON.stringify(messages)).toEqual([400, 'invalid_request', field]);
      expect(res.body.error.message).toContain(field);
    }
    expect(await readAll(api, chat)).toEqual([]);
    expect(await readAll(api, responses)).toEqual([]);
  });
});

describe('A2: compaction understands both formats', () => {
  const long: [ItemFormat, Item[]][] = [
    ['responses', longResponsesTranscript(30)],
    ['chat', longChatTranscript(30)],
  ];
  for (const [format, items] of long) {
    for (const mode of ['rotate', 'in_place'] as const) {
      it(`A2: a ${format} session with tool calls compacts (${mode}) with no dangling call or result, and a summary of its own format`, async () => {
        expect(dangling(format, items)).toEqual({ unanswered: [], orphans: [] });
        const id = await createSession(api, { format });
        await appendAll(api, id, items);
        // A keepLast whose naive cut falls between a call and its result: the plan must move the cut.
        const keepLast = splittingKeepLast(format, items);
        const res = await api('POST', `/sessions/${id}/compress`, { body: { mode, keepLast } });
        expect(res.body).toMatchObject({ outcome: 'compressed', mode });
        const live = await readAll(api, res.body.sessionId);
        expect(live).toEqual(res.body.messages);
        expect(live.length).toBeLessThan(items.length);
        expect(dangling(format, live)).toEqual({ unanswered: [], orphans: [] });
        const adapter = adapterFor(format);
        const summaries = live.filter((it) => adapter.isSummary(it));
        expect(summaries).toHaveLength(1);
        // A summary of the session's own format (the adapter's own summary item carries its shape).
        expect(Object.keys(summaries[0]!).sort()).toEqual(Object.keys(adapter.summaryItem('x')).sort());
        // Every call left in the live transcript is the one the client sent, with its result right there.
        for (const it of live.filter((x) => adapter.toolCallsOf(x).length > 0)) expect(items).toContainEqual(it);
        if (mode === 'rotate') expect((await api('GET', `/sessions/${res.body.sessionId}`)).body.session.format).toBe(format);
      });
    }
  }

  it('A2: a call still waiting for its result stays in the live transcript, and its result appended later pairs with it', async () => {
    const id = await createSession(api, { format: 'responses' });
    const items = [...longResponsesTranscript(12), ...agentsSdkPendingCall];
    await appendAll(api, id, items);
    const res = await api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 1 } });
    expect(res.body.outcome).toBe('compressed');
    const live = await readAll(api, res.body.sessionId);
    expect(dangling('responses', live)).toEqual({ unanswered: ['call_refund'], orphans: [] });
    expect(live.at(-1)).toEqual(agentsSdkPendingCall.at(-1));
    const result = {
      type: 'function_call_result',
      callId: 'call_refund',
      name: 'issue_refund',
      status: 'completed',
      output: 'refund R-77 issued',
    };
    expect((await api('POST', `/sessions/${res.body.sessionId}/messages`, { body: { messages: [result] } })).status).toBe(200);
    expect(dangling('responses', await readAll(api, res.body.sessionId))).toEqual({ unanswered: [], orphans: [] });
  });

  it('issue 11: a 380 KB message of one unbroken run is accepted, counted and compacted within the request', async () => {
    const id = await createSession(api, { format: 'chat' });
    const run = singleRunText(379_000);
    await appendAll(api, id, [...turns(0, 3), { role: 'user', content: run }, ...turns(3, 3)]);
    expect((await readAll(api, id))[6]).toEqual({ role: 'user', content: run });
    // Quadratic counting took ~85 s for this one message: the request would time out (29 s) instead.
    const res = await api('POST', `/sessions/${id}/compress`, { body: { mode: 'rotate', keepLast: 2 } });
    expect(res.status).toBe(200);
    expect(res.body.outcome).toBe('compressed');
    const live = await readAll(api, res.body.sessionId);
    expect(live.some((it) => it.content === run)).toBe(false);
    expect(JSON.stringify(live).length).toBeLessThan(run.length / 10);
  });
});
