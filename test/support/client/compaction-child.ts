// One process of the X2 two-process test (agents-sdk/compaction-two-processes.test.ts), over real
// HTTP. ROLE=compactor compacts the conversation, pausing inside its model call until the parent
// writes "go": MODE=engine through LineageSession's `compaction: {engine}` (a held attempt), or
// MODE=wrapper through the SDK's OpenAIResponsesCompactionSession around a LineageSession (its
// clear-and-re-add). ROLE=appender adds one item through its own LineageSession. The model is a
// stand-in for OpenAI's responses.compact (no network): its output is one compaction item and the
// snapshot's first user message.
import { createInterface } from 'node:readline';
import { OpenAIResponsesCompactionSession } from '@openai/agents-openai';
import { LineageClient, responsesCompactEngine } from '../../../lib/client/index.js';
import { LineageSession } from '../../../lib/client/agents.js';

export type CompactionChildLine =
  | { kind: 'compacting'; inputCount: number }
  | { kind: 'appended' }
  | { kind: 'done'; outcome: unknown }
  | { kind: 'error'; message: string };

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};
const say = (line: CompactionChildLine) => process.stdout.write(`${JSON.stringify(line)}\n`);
const lines = createInterface({ input: process.stdin });
const go = new Promise<void>((resolve) => lines.on('line', (l) => l.trim() === 'go' && resolve()));

const client = new LineageClient({ baseUrl: env('LINEAGE_BASE_URL'), apiKey: env('LINEAGE_API_KEY') });
const sessionId = env('CONVERSATION_ID');

/** The stand-in for `openai.responses.compact`: tells the parent, waits for "go", answers. */
const openai = {
  responses: {
    async compact(body: { input?: unknown }) {
      const input = (body.input ?? []) as { role?: string }[];
      say({ kind: 'compacting', inputCount: input.length });
      await go;
      const firstUser = input.find((i) => i.role === 'user');
      return {
        output: [{ type: 'compaction', id: 'cmp_two_processes', encrypted_content: 'ciphertext' }, ...(firstUser ? [firstUser] : [])],
        usage: {
          input_tokens: 1,
          output_tokens: 1,
          total_tokens: 2,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens_details: { reasoning_tokens: 0 },
        },
      };
    },
  },
};

async function main(): Promise<void> {
  const role = env('ROLE');
  if (role === 'appender') {
    await new LineageSession({ client, sessionId }).addItems([{ role: 'user', content: [{ type: 'input_text', text: 'from process B' }] }]);
    say({ kind: 'appended' });
    return;
  }
  if (process.env.MODE === 'wrapper') {
    const wrapper = new OpenAIResponsesCompactionSession({
      client: openai as never,
      underlyingSession: new LineageSession({ client, sessionId }),
      compactionMode: 'input',
    });
    const r = await wrapper.runCompaction({ force: true, compactionMode: 'input' });
    say({ kind: 'done', outcome: r ? 'compacted' : null });
    return;
  }
  const session = new LineageSession({ client, sessionId, compaction: { engine: responsesCompactEngine(openai, { model: 'stand-in' }) } });
  const r = await session.compact();
  say({ kind: 'done', outcome: r.outcome });
}

main()
  .catch((err: unknown) => say({ kind: 'error', message: String(err) }))
  .finally(() => {
    lines.close();
  });
