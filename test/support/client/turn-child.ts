// Child process of the two-process turn test (issue 32): one LineageSession on a shared
// conversation whose SDK run is held in a turn: runTurn(fn, {strategy}). Inside the turn it
// writes `holding`, waits for "go" on stdin, then runs one agent turn (a tool call) through the
// SDK Runner. Writes `done` or `failed` (the error's name and code), with the model's call count.
// Env: LINEAGE_BASE_URL, LINEAGE_API_KEY, CONVERSATION_ID, STRATEGY, TAG.
import { createInterface } from 'node:readline';
import type { ModelRequest } from '@openai/agents-core';
import { LineageClient } from '../../../lib/client/index.js';
import { LineageSession } from '../../../lib/client/agents.js';
import { createOpsAgent, createRunner, question, ScriptedOpsModel, SERVICES } from '../../../infra/examples/ops-agent.js';

export type TurnChildLine =
  | { kind: 'holding'; turnId: string }
  | { kind: 'done'; modelCalls: number }
  | { kind: 'failed'; name: string; code: string | undefined; modelCalls: number };

const emit = (line: TurnChildLine) => process.stdout.write(`${JSON.stringify(line)}\n`);
const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

let go: () => void;
const started = new Promise<void>((r) => (go = r));
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'go') go();
});

async function main(): Promise<void> {
  const client = new LineageClient({ baseUrl: env('LINEAGE_BASE_URL'), apiKey: env('LINEAGE_API_KEY') });
  const session = new LineageSession({ client, sessionId: env('CONVERSATION_ID') });
  const agent = createOpsAgent();
  const model = agent.model as ScriptedOpsModel;
  let modelCalls = 0;
  const respond = model.getResponse.bind(model);
  model.getResponse = (request: ModelRequest) => {
    modelCalls++;
    return respond(request);
  };
  const strategy = env('STRATEGY') as 'reject' | 'interrupt';
  try {
    await session.runTurn(
      async (turn) => {
        emit({ kind: 'holding', turnId: turn.turnId });
        await started;
        await createRunner().run(agent, question(env('TAG'), SERVICES[0]!), { session });
      },
      { strategy },
    );
    emit({ kind: 'done', modelCalls });
  } catch (err) {
    const e = err as { name?: string; code?: string; cause?: { code?: string } };
    emit({ kind: 'failed', name: e.name ?? 'Error', code: e.code ?? e.cause?.code, modelCalls });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`turn-child failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
