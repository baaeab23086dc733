// The example agent: an on-call assistant with one function tool (`lookup_service`) and a
// scripted Model, so it runs offline with no API key. The model is a rule, not a recording: a
// user turn makes it call the tool for the service the user named; a tool result makes it
// answer from that result. Every item it produces carries the turn's tag, so transcripts
// can be checked item by item.
import {
  Agent,
  Runner,
  Usage,
  tool,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type StreamEvent,
} from '@openai/agents-core';
import { z } from 'zod';

const STATUSES: Record<string, { state: string; detail: string }> = {
  'checkout-api': { state: 'degraded', detail: 'p99 latency 2.4 s since the 14:05 deploy; the payments client retries on timeout' },
  'payments-worker': { state: 'healthy', detail: 'queue depth 12, no errors in the last hour' },
  'search-indexer': { state: 'failing', detail: 'OOM-killed 3 times; the index build needs 6 GiB, the pod has 4 GiB' },
  'auth-gateway': { state: 'healthy', detail: 'certificate renewed yesterday, valid for 89 days' },
};
export const SERVICES = Object.keys(STATUSES);

export const lookupService = tool({
  name: 'lookup_service',
  description: 'Current health of one service: its state and what the monitors say.',
  parameters: z.object({ service: z.string(), ref: z.string() }),
  execute: ({ service, ref }) => {
    const s = STATUSES[service] ?? { state: 'unknown', detail: 'no monitor by that name' };
    return JSON.stringify({ ref, service, ...s });
  },
});

/** `[tag] How is <service> doing?`: what the scripted model expects a user to say. */
export function question(tag: string, service: string): string {
  return `[${tag}] How is ${service} doing? Tell me what the monitors say and what to do next.`;
}

function textOf(item: AgentInputItem | undefined): string {
  if (!item || !('content' in item)) return '';
  const c = item.content;
  if (typeof c === 'string') return c;
  return Array.isArray(c) ? c.map((p) => ('text' in p && typeof p.text === 'string' ? p.text : '')).join('') : '';
}

function outputText(item: AgentInputItem): string {
  const out = (item as { output?: unknown }).output;
  if (typeof out === 'string') return out;
  if (out && typeof out === 'object' && 'text' in out && typeof out.text === 'string') return out.text;
  return JSON.stringify(out);
}

/** The output items of a completed response, as the stream's `response_done` event types them. */
type ResponseOutput = Extract<StreamEvent, { type: 'response_done' }>['response']['output'];

/** A deterministic Model: tool call for a question, an answer for a tool result. */
export class ScriptedOpsModel implements Model {
  #responses = 0;

  getResponse(request: ModelRequest): Promise<ModelResponse> {
    const { id, output, inputTokens } = this.#respond(request);
    return Promise.resolve({
      responseId: id,
      usage: new Usage({ requests: 1, inputTokens, outputTokens: 40, totalTokens: inputTokens + 40 }),
      output,
    });
  }

  // The Model interface asks for an async iterable; a scripted model has nothing to await.
  // eslint-disable-next-line @typescript-eslint/require-await
  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    const { id, output, inputTokens } = this.#respond(request);
    yield {
      type: 'response_done',
      response: { id, usage: { requests: 1, inputTokens, outputTokens: 40, totalTokens: inputTokens + 40 }, output },
    };
  }

  #respond(request: ModelRequest): { id: string; output: ResponseOutput; inputTokens: number } {
    const input: AgentInputItem[] = typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : request.input;
    const last = input.at(-1);
    const id = `resp_${++this.#responses}`;
    const inputTokens = JSON.stringify(input).length >> 2; // a rough count; nothing bills it
    if (last && 'type' in last && last.type === 'function_call_result') {
      const result = JSON.parse(outputText(last)) as { ref: string; service: string; state: string; detail: string };
      const next =
        result.state === 'healthy'
          ? 'Nothing to do.'
          : 'Next step: page the owning team and roll back if it does not recover in 15 minutes.';
      const text = `[${result.ref}] ${result.service} is ${result.state}: ${result.detail}. ${next}`;
      return {
        id,
        inputTokens,
        output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }],
      };
    }
    const text = textOf(last);
    const tag = /^\[([^\]]+)\]/.exec(text)?.[1] ?? 'untagged';
    const service = SERVICES.find((s) => text.includes(s)) ?? 'unknown-service';
    const call = {
      type: 'function_call' as const,
      callId: `call_${tag.replace(/\W+/g, '_')}`,
      name: 'lookup_service',
      arguments: JSON.stringify({ service, ref: tag }),
      status: 'completed' as const,
    };
    return { id, inputTokens, output: [call] };
  }
}

export function createOpsAgent(): Agent {
  return new Agent({
    name: 'on-call assistant',
    instructions: 'You help the on-call engineer. Look services up with lookup_service before answering.',
    model: new ScriptedOpsModel(),
    tools: [lookupService],
  });
}

/** No tracing: nothing leaves the machine. */
export function createRunner(): Runner {
  return new Runner({ tracingDisabled: true });
}
