// Ported from openai/openai-agents-js packages/agents-core/test/runner/sessionPersistence.test.ts
// at commit 6d0c61a5f62a5ed8142996a25b33446c810f84b3: how run() uses a session (history before the
// new input, the turn's input and output saved in order, runCompaction after the save with the
// response id, compaction usage, streamed runs). Upstream drives the runner's internal helpers
// (saveToSession, saveStreamResultToSession, prepareInputItemsWithSession) with stub sessions;
// those are not exported by @openai/agents-core 0.20, so we wrote these against the public
// Runner.run() with the example's scripted model (infra/examples/ops-agent.ts) and LineageSession
// over real HTTP. The tests of the runner's own bookkeeping (tool-search provenance, reasoning id
// policies, legacy compaction reconciliation, HITL resume) test the SDK, not a session, and are not ported.
//
// Differences by design, asserted as ours:
// - runCompaction compacts through the service and returns null (no usage is added to the run).
// - A compaction replaces old turns with the service's summary: the next run's model input starts
//   with that summary, not with the full history.
// - The session is a conversation (SPEC K1-K2): a rotation made by another process between runs
//   changes the live session the service appends to, never the session's id (getSessionId()).
// - A failing compaction does not fail the run (upstream's runner rethrows what runCompaction
//   throws): it becomes a compaction_failed event, or a console.warn without onEvent.
import { randomUUID } from 'node:crypto';
import { Agent, type AgentInputItem, type Model, type ModelRequest, type ModelResponse, type StreamEvent } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LineageClient, LineageNetworkError } from '../../../../lib/client/index.js';
import { LineageSession, type LineageSessionEvent } from '../../../../lib/client/agents.js';
import { createRunner, lookupService, question, ScriptedOpsModel } from '../../../../infra/examples/ops-agent.js';
import { is, Wire } from '../../../support/client/wire.js';
import { startLocalService, type LocalService } from '../../../support/local-service.js';

let service: LocalService;
let apiKey: string;
let other: LineageClient;

beforeAll(async () => {
  service = await startLocalService({ afterTurn: false });
  apiKey = await service.createApiKey(`sdk-run-${randomUUID().slice(0, 8)}`);
  other = new LineageClient({ baseUrl: service.baseUrl, apiKey });
}, 180_000); // the build and serverless-offline, on a busy machine

afterAll(async () => {
  await service?.stop();
});

/** The scripted ops model, recording the input of every model request. */
class RecordingModel implements Model {
  readonly inputs: AgentInputItem[][] = [];
  readonly #inner = new ScriptedOpsModel();
  getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.inputs.push(structuredClone(request.input as AgentInputItem[]));
    return this.#inner.getResponse(request);
  }
  getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    this.inputs.push(structuredClone(request.input as AgentInputItem[]));
    return this.#inner.getStreamedResponse(request);
  }
}

function agentWith(model: Model): Agent {
  return new Agent({ name: 'on-call assistant', instructions: 'Look services up first.', model, tools: [lookupService] });
}

const json = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
/** What the service holds for the session's conversation (read by another client). */
const stored = async (s: LineageSession) => (await other.readConversation(await s.getSessionId())).items;
const types = (items: unknown[]) => items.map((i) => (i as { type?: string }).type);

describe('run() session persistence, against LineageSession', () => {
  it('concatenates session history with the new input, and saves the turn (input, tool call, result, answer) in order', async () => {
    const model = new RecordingModel();
    const agent = agentWith(model);
    const s = new LineageSession({ client: other });
    const first = await createRunner().run(agent, question('h1', 'checkout-api'), { session: s });
    const afterFirst = await stored(s);
    expect(types(afterFirst)).toEqual(['message', 'function_call', 'function_call_result', 'message']);
    expect(afterFirst).toEqual(json(first.history));

    await createRunner().run(agent, question('h2', 'auth-gateway'), { session: s });
    // The second run's first model request: the stored history, then the new user input.
    const input = model.inputs[2]!;
    expect(json(input.slice(0, 4))).toEqual(afterFirst);
    expect(JSON.stringify(input[4])).toContain('[h2] How is auth-gateway doing?');
    expect(input).toHaveLength(5);
    expect(await stored(s)).toHaveLength(8);
  });

  it('persists streamed input and output as one turn', async () => {
    const s = new LineageSession({ client: other });
    const result = await createRunner().run(agentWith(new RecordingModel()), question('st', 'payments-worker'), {
      session: s,
      stream: true,
    });
    for await (const _ of result.toStream()) {
      // drain
    }
    await result.completed;
    expect(String(result.finalOutput)).toContain('[st] payments-worker is healthy');
    const items = await stored(s);
    expect(types(items)).toEqual(['message', 'function_call', 'function_call_result', 'message']);
    expect(items).toEqual(json(result.history));
  });

  it('invokes runCompaction after persisting each turn, with the response id; ours compacts by policy and adds no usage', async () => {
    const w = new Wire(service.baseUrl, apiKey);
    const events: LineageSessionEvent[] = [];
    const s = new LineageSession({
      client: w.client({ retry: { maxAttempts: 3 } }),
      compaction: { mode: 'in_place', keepLast: 2, afterTurnAboveItems: 10 },
      onEvent: (e) => events.push(e),
    });
    const spy = vi.spyOn(s, 'runCompaction');
    const agent = agentWith(new RecordingModel());
    await createRunner().run(agent, question('c1', 'search-indexer'), { session: s });
    await createRunner().run(agent, question('c2', 'checkout-api'), { session: s });
    expect(spy).toHaveBeenCalled();
    expect(spy.mock.calls.at(-1)?.[0]).toMatchObject({ responseId: expect.stringMatching(/^resp_/) });
    expect(w.lines(is('POST', /\/compress$/))).toEqual([]); // 8 items: not past the policy's threshold
    const result = await createRunner().run(agent, question('c3', 'auth-gateway'), { session: s });
    // The compaction came after the third turn's items were saved (12 > 10), and compacted them.
    const lines = w.lines(is('POST', /\/(messages|compress)$/)).map((l) => l.split('/').at(-1));
    expect(lines.at(-1)).toBe('compress');
    expect(lines.filter((l) => l === 'compress')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'compacted').map((e) => e.type === 'compacted' && e.response.outcome)).toEqual(['compressed']);
    // Ours returns null: the service's compaction is no model request of this run.
    expect(result.state.usage.requests).toBe(2);
  });

  it('by design: after a compaction the next run reads the summary and the kept tail, not the whole history', async () => {
    const model = new RecordingModel();
    const agent = agentWith(model);
    const s = new LineageSession({ client: other, compaction: { mode: 'rotate', keepLast: 2 } });
    for (const [tag, svc] of [
      ['p1', 'checkout-api'],
      ['p2', 'search-indexer'],
      ['p3', 'auth-gateway'],
    ] as const)
      await createRunner().run(agent, question(tag, svc), { session: s });
    const before = s.liveSessionId!;
    const id = await s.getSessionId();
    const response = await s.compact();
    expect(response).toMatchObject({ outcome: 'compressed', mode: 'rotate' });
    expect(s.liveSessionId).not.toBe(before);
    expect(await s.getSessionId()).toBe(id);

    model.inputs.length = 0;
    await createRunner().run(agent, question('p4', 'payments-worker'), { session: s });
    const input = model.inputs[0]!;
    expect(input.some((i) => JSON.stringify(i).includes('Summary of'))).toBe(true);
    expect(input.length).toBeLessThan(12 + 1);
    expect(JSON.stringify(input.at(-1))).toContain('[p4]');
    expect(json(input.slice(0, -1))).toEqual(response.messages);
  });

  it('K2 by design: a rotation another process made between runs is followed; the run appends to the live tip, the id stays', async () => {
    const events: LineageSessionEvent[] = [];
    const s = new LineageSession({ client: other, onEvent: (e) => events.push(e) });
    const agent = agentWith(new RecordingModel());
    await createRunner().run(agent, question('f1', 'checkout-api'), { session: s });
    const id = await s.getSessionId();
    const root = s.liveSessionId!;
    const rotated = await other.compressConversation(id, { mode: 'rotate', keepLast: 1 });
    expect(rotated.sessionId).not.toBe(root);

    await createRunner().run(agent, question('f2', 'auth-gateway'), { session: s });
    expect(s.liveSessionId).toBe(rotated.sessionId);
    expect(await s.getSessionId()).toBe(id);
    expect(events).toContainEqual({ type: 'followed', from: root, to: rotated.sessionId, via: 'rotation' });
    const live = await other.readAll(rotated.sessionId);
    expect(JSON.stringify(live.at(-1))).toContain('[f2] auth-gateway is healthy');
    expect((await other.getSession(root)).messageCount).toBe(4); // nothing of the second run landed on the ended root
  });

  it('by design: a failing compaction does not fail the run; it is reported as an event', async () => {
    const w = new Wire(service.baseUrl, apiKey);
    w.fail(is('POST', /\/compress$/));
    const events: LineageSessionEvent[] = [];
    const s = new LineageSession({ client: w.client(), compaction: { afterTurnAboveItems: 0 }, onEvent: (e) => events.push(e) });
    const result = await createRunner().run(agentWith(new RecordingModel()), question('x1', 'checkout-api'), { session: s });
    expect(String(result.finalOutput)).toContain('[x1] checkout-api is degraded');
    expect(await stored(s)).toHaveLength(4);
    const failed = events.filter((e) => e.type === 'compaction_failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({
      conversationId: s.conversationId,
      sessionId: s.liveSessionId,
      error: expect.any(LineageNetworkError),
    });
  });

  it('by design: without onEvent a failing compaction is a console warning, and the run still succeeds', async () => {
    const w = new Wire(service.baseUrl, apiKey);
    w.fail(is('POST', /\/compress$/));
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const s = new LineageSession({ client: w.client(), compaction: { afterTurnAboveItems: 0 } });
      const result = await createRunner().run(agentWith(new RecordingModel()), question('x2', 'auth-gateway'), { session: s });
      expect(String(result.finalOutput)).toContain('[x2] auth-gateway is healthy');
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('compaction after the turn failed'));
    } finally {
      warn.mockRestore();
    }
  });
});
