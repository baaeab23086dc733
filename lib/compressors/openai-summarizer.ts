// LLM compaction engine for any OpenAI-compatible chat completions endpoint. Same output
// shape as the extractive engine (instructions + first human + summary + last K, in the
// session's format); only the summary text comes from the model, which reads the middle
// rendered as text, tool calls and results included (SPEC A2). Any failure falls back to
// extractive (SPEC C12).
import * as z from 'zod/mini';
import { adapterFor } from '../items/adapters.js';
import { clip, clipBlock } from '../items/json.js';
import { loadTokenCounter, type TokenCounter } from '../items/tokens.js';
import { ServiceError } from '../errors.js';
import { SUMMARY_PREFIX, type FormatAdapter, type Item } from '../items/types.js';
import { schemaProblem } from '../items/validate-shared.js';
import { digestMiddle } from './middle-digest.js';
import { extractiveCompress, summaryBudget } from './extractive.js';
import { fitSummary } from './summary-text.js';
import { assemble, planCompaction, type TranscriptPlan } from './transcript-plan.js';
import type { CompressionEngine, CompressOptionName, CompressOptions, CompressResult, Transcript } from './types.js';
import { safeParse } from '../validation.js';

export const DEFAULT_SUMMARIZER_TIMEOUT_MS = 30_000;
/** Transcript sent to the model; older items beyond it are passed as an extractive digest. */
export const DEFAULT_MAX_TRANSCRIPT_CHARS = 200_000;
/** Any one item's share of the transcript (the adapters already cut long arguments and outputs). */
const MAX_ITEM_CHARS = 5_000;

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
  choices: z.array(z.object({ message: z.object({ content: z.optional(z.nullable(z.string())) }) })).check(z.minLength(1, 'no choices')),
});

/** The summarizer's call failed (an opaque 500 to the caller; the log has the reason). */
class SummarizerFailure extends ServiceError {
  override readonly name = 'SummarizerFailure';
  constructor(message: string) {
    super(message, { status: 500, code: 'internal' });
  }
}

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

  async compress(transcript: Transcript, options: CompressOptions = {}): Promise<CompressResult> {
    const { items } = transcript;
    if (options.signal?.aborted) return abortedResult(items, options.signal);
    const adapter = adapterFor(transcript.format);
    const plan = planCompaction(items, adapter, options.keepLast);
    if (!plan) return { items: [...items] };
    const counter = await loadTokenCounter();

    try {
      const text = await this.summarize(plan, options, adapter, counter);
      const summary = text.startsWith(SUMMARY_PREFIX) ? text : `${SUMMARY_PREFIX} ${text}`;
      return { items: assemble(plan, adapter.summaryItem(summary)) };
    } catch (err) {
      if (options.signal?.aborted) return abortedResult(items, options.signal);
      const fallback = this.opts.fallback
        ? await this.opts.fallback.compress(transcript, onlyAccepted(this.opts.fallback, options))
        : extractiveCompress(transcript, options, counter);
      const warning = `summarizer failed (${describe(err)}); fell back to ${this.opts.fallback?.name ?? 'extractive'}`;
      return { ...fallback, warnings: [warning, ...(fallback.warnings ?? [])] };
    }
  }

  private async summarize(plan: TranscriptPlan, options: CompressOptions, adapter: FormatAdapter, counter: TokenCounter): Promise<string> {
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
        body: JSON.stringify({ model: this.opts.model, messages: this.prompt(plan, options, adapter, counter) }),
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

    const parsed = safeParse(completionSchema, body);
    if (!parsed.success) {
      const problem = schemaProblem(completionSchema, body);
      throw new SummarizerFailure(
        `unexpected response: ${problem ? `${problem.path ? `${problem.path}: ` : ''}${problem.message}` : 'bad shape'}`,
      );
    }
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

  private prompt(
    plan: TranscriptPlan,
    options: CompressOptions,
    adapter: FormatAdapter,
    counter: TokenCounter,
  ): { role: 'system' | 'user'; content: string }[] {
    const budget = summaryBudget(plan, options.targetTokens, adapter, counter);
    const instructions = [
      'You compact the middle of a conversation between a user and an AI agent so the agent can continue the work without it.',
      'Write a concise summary with these headings: "Key facts:", "Decisions:", "Tool calls:" (tool names and what they established), "Open tasks:".',
      'Use short bullet lines. Keep names, paths, numbers and identifiers exact. Do not invent anything. Do not address the user.',
      budget !== undefined ? `Stay under ${Math.max(64, budget)} tokens.` : '',
      options.focus ? `Focus on: ${options.focus}` : '',
    ].filter(Boolean);
    return [
      { role: 'system', content: instructions.join('\n') },
      { role: 'user', content: this.transcript(plan.middle, adapter, counter) },
    ];
  }

  /** The middle as readable text, newest items first to be kept; older ones beyond the bound become a digest. */
  private transcript(middle: readonly Item[], adapter: FormatAdapter, counter: TokenCounter): string {
    const parts: string[] = [];
    let used = 0;
    let cut = 0;
    for (let i = middle.length - 1; i >= 0; i--) {
      const block = clipBlock(adapter.render(middle[i]!), MAX_ITEM_CHARS);
      if (used + block.length > this.maxTranscriptChars) {
        cut = i + 1;
        break;
      }
      parts.unshift(block);
      used += block.length;
    }
    const header = `Conversation excerpt to summarize (${middle.length} items):`;
    if (cut === 0) return [header, ...parts].join('\n\n');
    const digest = fitSummary(digestMiddle(middle.slice(0, cut), adapter), undefined, counter.countText);
    return [header, `Digest of the ${cut} oldest items (too long to include):\n${digest}`, ...parts].join('\n\n');
  }
}

function abortedResult(items: readonly Item[], signal: AbortSignal): CompressResult {
  return { aborted: true, items: [...items], warnings: [`summarizer aborted (${describe(signal.reason)}); nothing compacted`] };
}

/** Pass an engine only the options it declares (SPEC C6). */
function onlyAccepted(engine: CompressionEngine, options: CompressOptions): CompressOptions {
  return Object.fromEntries(engine.acceptedOptions.filter((name) => options[name] !== undefined).map((name) => [name, options[name]]));
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    // undici reports connection errors as "fetch failed" with the reason in `cause`.
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message || err.name}${cause}`;
  }
  return typeof err === 'string' ? err : 'unknown error';
}
