// SPEC X2 / I4 across two processes (issue 30, item 4), over real HTTP: process B appends while
// process A's compaction model runs. Through LineageSession with `compaction: {engine}` (a held
// attempt: the commit carries what was appended after the snapshot) B's item survives. Through
// the SDK's OpenAIResponsesCompactionSession wrapped around LineageSession it is lost: the
// wrapper replaces the history by clearSession() and addItems(output), which is not atomic across
// processes. That loss is the documented difference (lib/client/README.md: do not wrap
// LineageSession in it), asserted here as the wrapper's behaviour, not ours.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LineageClient } from '../../../../lib/client/index.js';
import { bundleChild } from '../../../support/bundle-child.js';
import { startChild, type Child } from '../../../support/client/children.js';
import type { CompactionChildLine } from '../../../support/client/compaction-child.js';
import { startLocalService, type LocalService } from '../../../support/local-service.js';

const source = fileURLToPath(new URL('../../../support/client/compaction-child.ts', import.meta.url));
const bundle = fileURLToPath(new URL('../../../../node_modules/.cache/client/compaction-child.mjs', import.meta.url));

let service: LocalService;
let client: LineageClient;
let apiKey: string;

beforeAll(async () => {
  [service] = await Promise.all([startLocalService({ afterTurn: false }), bundleChild(source, bundle)]);
  apiKey = await service.createApiKey(`sdk-x2-two-${randomUUID().slice(0, 8)}`);
  client = new LineageClient({ baseUrl: service.baseUrl, apiKey });
}, 180_000);

afterAll(async () => {
  await service?.stop();
});

// Items in the Agents SDK's shape (the wrapper converts them to the Responses API's).
const task = { role: 'user', content: [{ type: 'input_text', text: 'the task' }] };
const history = [
  task,
  ...Array.from({ length: 6 }, (_, i) => ({
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: `step ${i}: ${'words '.repeat(60)}` }],
  })),
];

/** A compacts; while its model runs, B appends; then A's model answers. What the conversation holds afterwards. */
async function compactWhileAppending(mode: 'engine' | 'wrapper') {
  const conversationId = `x2-two-${mode}-${randomUUID().slice(0, 8)}`;
  await client.putConversation(conversationId, { format: 'responses' });
  await client.appendToConversation(conversationId, history);
  const common = { LINEAGE_BASE_URL: service.baseUrl, LINEAGE_API_KEY: apiKey, CONVERSATION_ID: conversationId };
  const children: Child<CompactionChildLine>[] = [];
  try {
    const a = startChild<CompactionChildLine>(bundle, { ...common, ROLE: 'compactor', MODE: mode });
    children.push(a);
    const compacting = await a.next('compacting').catch((err: unknown) => {
      throw new Error(`${String(err)}\n${JSON.stringify(a.lines)}`);
    });
    expect(compacting).toMatchObject({ inputCount: history.length });
    const b = startChild<CompactionChildLine>(bundle, { ...common, ROLE: 'appender' });
    children.push(b);
    await b.next('appended');
    a.send('go');
    const done = await a.next('done');
    expect(a.lines.filter((l) => l.kind === 'error')).toEqual([]);
    expect(await Promise.all(children.map((c) => c.exited))).toEqual([0, 0]);
    return { done, items: (await client.readConversation(conversationId)).items };
  } finally {
    children.forEach((c) => c.kill());
  }
}

describe('X2: an append from another process during a compaction, two processes', () => {
  it('X2/I4: through LineageSession with compaction.engine (a held attempt), B’s append survives after the replacement', async () => {
    const { done, items } = await compactWhileAppending('engine');
    expect(done.outcome).toBe('compressed');
    expect(items).toEqual([
      { type: 'compaction', id: 'cmp_two_processes', encrypted_content: 'ciphertext' },
      task,
      { role: 'user', content: [{ type: 'input_text', text: 'from process B' }] },
    ]);
  }, 240_000);

  it('X2 (the documented difference): through the SDK’s OpenAIResponsesCompactionSession around LineageSession, B’s append is lost', async () => {
    const { done, items } = await compactWhileAppending('wrapper');
    expect(done.outcome).toBe('compacted');
    // The wrapper cleared the conversation and re-added only the model's output: B's item is gone.
    expect(items.map((i) => (i as { type?: string }).type ?? 'message')).toEqual(['compaction', 'message']);
    expect(JSON.stringify(items)).not.toContain('from process B');
  }, 240_000);
});
