// Child process of the two-process Agents SDK test: one LineageSession on a shared
// conversation, in its own process.
//   ROLE=agent      runs agent turns (a tool call each) through the SDK Runner: at least
//                   TURNS, and on until two turns after the line "finish" arrived on stdin
//                   (the test sends it once the compactor is done), at most 40
//   ROLE=compactor  rotates once the conversation holds ROTATE_AT items, then compacts in
//                   place once the live session has grown by IN_PLACE_AFTER items, adding a
//                   note of its own after each compaction
// Env: LINEAGE_BASE_URL, LINEAGE_API_KEY, CONVERSATION_ID (whichever process uses it first
// creates it, SPEC K1), TAG.
// Writes JSON lines on stdout: `added` for every append it made (items, the session they landed
// on, when), `compacted` for each compaction, then `done`; on the line "report" from stdin it
// reads the conversation's tail once and writes `report` with getSessionId() and the live
// session that read named, then exits.
import { createInterface } from 'node:readline';
import type { AgentInputItem } from '@openai/agents-core';
import { LineageClient, type Item } from '../../../lib/client/index.js';
import { LineageSession, type LineageSessionEvent } from '../../../lib/client/agents.js';
import { createOpsAgent, createRunner, question, SERVICES } from '../../../infra/examples/ops-agent.js';

export type ChildLine =
  | { kind: 'added'; items: Item[]; sessionId: string; t0: number; t1: number }
  | { kind: 'compacted'; mode: 'rotate' | 'in_place'; t0: number; t1: number; response: unknown }
  | { kind: 'followed'; from: string; to: string; via: string }
  | { kind: 'done' }
  | { kind: 'report'; conversationId: string; liveSessionId: string | undefined };

const emit = (line: ChildLine) => process.stdout.write(`${JSON.stringify(line)}\n`);
const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Lines heard on stdin ("finish", "report"). */
const heard = new Set<string>();
const listeners: (() => void)[] = [];
createInterface({ input: process.stdin }).on('line', (line) => {
  heard.add(line.trim());
  listeners.splice(0).forEach((l) => l());
});
async function until(word: string): Promise<void> {
  while (!heard.has(word)) await new Promise<void>((r) => listeners.push(r));
}

/** Records every append: the items, the session they landed on, and when the call ran. */
class RecordingSession extends LineageSession {
  landed: string[] = [];
  override async addItems(items: AgentInputItem[]): Promise<void> {
    const t0 = Date.now();
    this.landed = [];
    await super.addItems(items);
    // One event per append; these tests add far fewer than 98 items at a time.
    if (this.landed.length !== 1) throw new Error(`expected one append, saw ${this.landed.length}`);
    emit({ kind: 'added', items: items, sessionId: this.landed[0]!, t0, t1: Date.now() });
  }
}

function session(client: LineageClient): RecordingSession {
  const s: RecordingSession = new RecordingSession({
    client,
    sessionId: env('CONVERSATION_ID'),
    onEvent: (e: LineageSessionEvent) => {
      if (e.type === 'appended') s.landed.push(e.sessionId);
      if (e.type === 'followed') emit({ kind: 'followed', from: e.from, to: e.to, via: e.via });
    },
  });
  return s;
}

async function agent(s: RecordingSession, tag: string): Promise<void> {
  const minTurns = Number(env('TURNS'));
  const agent = createOpsAgent();
  const runner = createRunner();
  let afterFinish = 0;
  for (let i = 1; i <= 40; i++) {
    await runner.run(agent, question(`${tag}${i}`, SERVICES[i % SERVICES.length]!), { session: s });
    if (heard.has('finish')) afterFinish++;
    if (afterFinish >= 2 && i >= minTurns) return;
  }
}

async function compactor(client: LineageClient, s: RecordingSession, tag: string): Promise<void> {
  const liveCount = async () => client.getConversation(await s.getSessionId()).then((x) => x.messageCount);
  const waitFor = async (enough: (n: number) => boolean) => {
    for (let n = await liveCount(); !enough(n); n = await liveCount()) await sleep(25);
  };
  const compact = async (mode: 'rotate' | 'in_place') => {
    const t0 = Date.now();
    const response = await s.compact({ mode, keepLast: 4 });
    emit({ kind: 'compacted', mode, t0, t1: Date.now(), response });
    return response;
  };
  const note = (n: number) =>
    s.addItems([
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: `[${tag}${n}] operator note: watch the error budget.` }] },
    ]);

  await waitFor((n) => n >= Number(env('ROTATE_AT')));
  await compact('rotate');
  await note(1);
  const after = await liveCount();
  await waitFor((n) => n >= after + Number(env('IN_PLACE_AFTER')));
  await compact('in_place');
  await note(2);
}

async function main(): Promise<void> {
  const client = new LineageClient({ baseUrl: env('LINEAGE_BASE_URL'), apiKey: env('LINEAGE_API_KEY') });
  const s = session(client);
  const tag = env('TAG');
  if (process.env.ROLE === 'agent') await agent(s, tag);
  else if (process.env.ROLE === 'compactor') await compactor(client, s, tag);
  else throw new Error(`unknown ROLE ${process.env.ROLE}`);
  emit({ kind: 'done' });
  // Asked only once every process is done, so all of them answer about the same final chain.
  await until('report');
  await s.getItems(1);
  emit({ kind: 'report', conversationId: await s.getSessionId(), liveSessionId: s.liveSessionId });
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`lineage-child failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
