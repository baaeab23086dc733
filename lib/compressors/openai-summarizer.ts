// LLM compaction engine for any OpenAI-compatible chat completions endpoint. Same output
// shape as the extractive engine (system + first human + summary + last K); only the
// summary text comes from the model. Any failure falls back to extractive (SPEC C12).
import { z } from 'zod';
import { SUMMARY_PREFIX, type Message } from '../messages.js';
import { clip, digestMiddle } from './middle-digest.js';
import { extractiveCompress, summaryBudget, summaryMessage } from './extractive.js';
import { fitSummary } from './summary-text.js';
import { toolCallsOf } from './tool-calls.js';
import { assemble, planCompaction, type TranscriptPlan } from './transcript-plan.js';
import type { CompressionEngine, CompressOptionName, CompressOptions, CompressResult } from './types.js';

export const DEFAULT_SUMMARIZER_TIMEOUT_MS = 30_000;
/** Transcript sent to the model; older messages beyond it are passed as an extractive digest. */
export const DEFAULT_MAX_TRANSCRIPT_CHARS = 200_000;
/** Any one message's share of the transcript. */
const MAX_MESSAGE_CHARS = 4_000;

export interface OpenAiSummarizerOptions {
  /** e.g. https://api.openai.com/v1 or http://localhost:11434/v1 */
  baseUrl: string;
  /** Optional: local OpenAI-compatible servers often need none. */
  apiKey?: string;
  model: string;
  /** Used when the model cannot deliver; extractive unless given. */
  fallback?: CompressionEngine;
  fetch?: typeof globalThis.fetch;
  timeoutMs?: number;
  maxTranscriptChars?: number;
  now?: () => number;
}

const completionSchema = z.object({
  choices: z
    .array(z.object({ message: z.object({ content: z.string().nullish() }) }))
    .min(1, 'no choices'),
});

class SummarizerFailure extends Error {}

export class OpenAiSummarizer implements CompressionEngine {
  readonly name = 'openai-summarizer';
  readonly acceptedOptions: readonly CompressOptionName[] = ['keepLast', 'targetTokens', 'signal', 'deadline', 'focus'];

  private readonly endpoint: string;
  private readonly fetchImpl: typeof globalThis.fetch;
  private readonly timeoutMs: number;
  private readonly maxTranscriptChars: number;
  private readonly now: () => number;

  constructor(private readonly opts: OpenAiSummarizerOptions) {
    this.endpoint = `${opts.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.fetchImpl = opts.fetch ?? globalThis.fetch;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_SUMMARIZER_TIMEOUT_MS;
    this.maxTranscriptChars = opts.maxTranscriptChars ?? DEFAULT_MAX_TRANSCRIPT_CHARS;
    this.now = opts.now ?? Date.now;
  }

  async compress(messages: readonly Message[], options: CompressOptions = {}): Promise<CompressResult> {
    if (options.signal?.aborted) return abortedResult(messages, options.signal);
    const plan = planCompaction(messages, options.keepLast);
    if (!plan) return { messages: [...messages] };

    try {
      const text = await this.summarize(plan, options);
      const content = text.startsWith(SUMMARY_PREFIX) ? text : `${SUMMARY_PREFIX} ${text}`;
      return { messages: assemble(plan, summaryMessage(content)) };
    } catch (err) {
      if (options.signal?.aborted) return abortedResult(messages, options.signal);
      const fallback = this.opts.fallback
        ? await this.opts.fallback.compress(messages, onlyAccepted(this.opts.fallback, options))
        : extractiveCompress(messages, options);
      const warning = `summarizer failed (${describe(err)}); fell back to ${this.opts.fallback?.name ?? 'extractive'}`;
      return { ...fallback, warnings: [warning, ...(fallback.warnings ?? [])] };
    }
  }

  private async summarize(plan: TranscriptPlan, options: CompressOptions): Promise<string> {
    const timeoutMs = this.timeoutFor(options.deadline);
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;

    let body: unknown;
    try {
      const res = await this.fetchImpl(this.endpoint, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: this.opts.model, messages: this.prompt(plan, options) }),
        signal,
      });
      const raw = await res.text();
      if (!res.ok) throw new SummarizerFailure(`HTTP ${res.status}: ${clip(raw, 200)}`);
      try {
        body = JSON.parse(raw);
      } catch {
        throw new SummarizerFailure('response is not valid JSON');
      }
    } catch (err) {
      if (timeout.aborted && !options.signal?.aborted) throw new SummarizerFailure(`timed out after ${timeoutMs} ms`);
      throw err;
    }

    const parsed = completionSchema.safeParse(body);
    if (!parsed.success) throw new SummarizerFailure(`unexpected response: ${parsed.error.issues[0]?.message ?? 'bad shape'}`);
    const text = parsed.data.choices[0]?.message.content?.trim();
    if (!text) throw new SummarizerFailure('empty completion');
    return text;
  }

  /** The configured timeout, cut short by the caller's deadline (Lambda remaining time). */
  private timeoutFor(deadline: number | undefined): number {
    if (deadline === undefined) return this.timeoutMs;
    const left = Math.floor(deadline - this.now());
    if (left <= 0) throw new SummarizerFailure('deadline already passed');
    return Math.min(this.timeoutMs, left);
  }

  private prompt(plan: TranscriptPlan, options: CompressOptions): { role: 'system' | 'user'; content: string }[] {
    const budget = summaryBudget(plan, options.targetTokens);
    const instructions = [
      'You compact the middle of a conversation between a user and an AI agent so the agent can continue the work without it.',
      'Write a concise summary with these headings: "Key facts:", "Decisions:", "Tool calls:" (tool names and what they established), "Open tasks:".',
      'Use short bullet lines. Keep names, paths, numbers and identifiers exact. Do not invent anything. Do not address the user.',
      budget !== undefined ? `Stay under ${Math.max(64, budget)} tokens.` : '',
      options.focus ? `Focus on: ${options.focus}` : '',
    ].filter(Boolean);
    return [
      { role: 'system', content: instructions.join('\n') },
      { role: 'user', content: this.transcript(plan.middle) },
    ];
  }

  /** The middle as plain text, newest messages first to be kept; older ones beyond the bound become a digest. */
  private transcript(middle: readonly Message[]): string {
    const parts: string[] = [];
    let used = 0;
    let cut = 0;
    for (let i = middle.length - 1; i >= 0; i--) {
      const line = renderTurn(middle[i] as Message);
      if (used + line.length > this.maxTranscriptChars) {
        cut = i + 1;
        break;
      }
      parts.unshift(line);
      used += line.length;
    }
    const header = `Conversation excerpt to summarize (${middle.length} messages):`;
    if (cut === 0) return [header, ...parts].join('\n\n');
    const digest = fitSummary(digestMiddle(middle.slice(0, cut)), undefined);
    return [header, `Digest of the ${cut} oldest messages (too long to include):\n${digest}`, ...parts].join('\n\n');
  }
}

function renderTurn(m: Message): string {
  const who = m.role === 'tool' && typeof m.name === 'string' ? `tool ${m.name}` : m.role;
  const calls = toolCallsOf(m).map((c) => `${c.name}(${clip(c.arguments, 200)})`);
  const content = m.content.length > MAX_MESSAGE_CHARS ? `${m.content.slice(0, MAX_MESSAGE_CHARS)} …[${m.content.length - MAX_MESSAGE_CHARS} chars cut]` : m.content;
  return `[${who}]${calls.length > 0 ? ` calls ${calls.join(', ')}` : ''}\n${content}`;
}

function abortedResult(messages: readonly Message[], signal: AbortSignal): CompressResult {
  return { aborted: true, messages: [...messages], warnings: [`summarizer aborted (${describe(signal.reason)}); nothing compacted`] };
}

/** Pass an engine only the options it declares (SPEC C6). */
function onlyAccepted(engine: CompressionEngine, options: CompressOptions): CompressOptions {
  const picked: Record<string, unknown> = {};
  for (const name of engine.acceptedOptions) if (options[name] !== undefined) picked[name] = options[name];
  return picked as CompressOptions;
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    // undici reports connection errors as "fetch failed" with the reason in `cause`.
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message || err.name}${cause}`;
  }
  return typeof err === 'string' ? err : 'unknown error';
}
