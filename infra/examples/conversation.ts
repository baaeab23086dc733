// The example conversation: six agent turns through @openai/agents-core's Runner, history kept
// by the service through LineageSession under one conversation id (SPEC K1), a rotation in the
// middle, then the lineage chain and the live transcript. Used by `npm run example:agent` and by
// the CI smoke test.
import type { Item, LineageClient, LineageEntry } from '@session-lineage/client';
import { LineageSession } from '@session-lineage/client/agents';
import { createOpsAgent, createRunner, question, SERVICES } from './ops-agent.js';

export interface ExampleResult {
  conversationId: string;
  /** getSessionId() after each turn: the conversation id every time, rotation or not. */
  idsSeen: string[];
  chain: LineageEntry[];
  liveSessionId: string;
  transcript: Item[];
  answers: string[];
}

export const TURNS = 6;
/** The rotation comes after this many turns. */
export const COMPACT_AFTER = 3;

export async function runExampleConversation(
  client: LineageClient,
  log: (line: string) => void = console.log,
  conversationId = `ops-chat-${globalThis.crypto.randomUUID().slice(0, 8)}`,
): Promise<ExampleResult> {
  // Your own id for the conversation (a user's or a thread's); created on first use.
  const session = new LineageSession({
    client,
    sessionId: conversationId,
    source: 'example-agent',
    metadata: { example: 'ops-agent' },
    onEvent: (e) => {
      if (e.type === 'created') log(`created conversation ${e.conversationId} (first session ${e.sessionId})`);
      if (e.type === 'followed') log(`  live session now ${e.to} (was ${e.from}; ${e.via})`);
    },
  });
  const agent = createOpsAgent();
  const runner = createRunner();
  const answers: string[] = [];
  const idsSeen: string[] = [];

  for (let i = 0; i < TURNS; i++) {
    const service = SERVICES[i % SERVICES.length]!;
    const result = await runner.run(agent, question(`turn ${i + 1}`, service), { session });
    const answer = String(result.finalOutput ?? '');
    answers.push(answer);
    log(`turn ${i + 1}: ${answer}`);
    idsSeen.push(await session.getSessionId());
    if (i + 1 === COMPACT_AFTER) {
      const c = await session.compact({ mode: 'rotate', keepLast: 4 });
      log(
        `compaction (rotate): ${c.outcome}${c.reason ? `/${c.reason}` : ''}, live session ${c.sessionId}, conversation still ${conversationId}`,
      );
    }
  }

  const transcript = (await session.getItems()) as Item[];
  const liveSessionId = session.liveSessionId!;
  const { chain } = await client.conversationLineage(conversationId);

  log(`\nconversation ${conversationId}, lineage chain (root → live tip):`);
  for (const s of chain) {
    log(`  ${s.sessionId}  ${s.messageCount} items  ${s.endReason ? `ended (${s.endReason}) → ${s.childSessionId}` : 'live'}`);
  }
  log(`\nlive transcript (${transcript.length} items):`);
  for (const item of transcript) log(`  ${render(item)}`);
  return { conversationId, idsSeen, chain, liveSessionId, transcript, answers };
}

/** One line per item: what it is and the start of its text. */
export function render(item: Item): string {
  const i = item as Record<string, unknown>;
  const kind =
    i.type === 'function_call'
      ? `call ${String(i.name)}(${String(i.arguments)})`
      : i.type === 'function_call_result'
        ? 'tool result'
        : String(i.role ?? i.type);
  const text = i.type === 'function_call' ? '' : textOf(i.type === 'function_call_result' ? i.output : i.content);
  const clipped = text.length > 110 ? `${text.slice(0, 107)}...` : text;
  return clipped ? `${kind}: ${clipped.replace(/\s+/g, ' ')}` : kind;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map(textOf).join(' ');
  if (content && typeof content === 'object' && 'text' in content) return String(content.text);
  return '';
}
