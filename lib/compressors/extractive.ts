// Deterministic, offline compaction engine: keeps the system prompt(s), the first human
// turn and the last K messages verbatim, and replaces the middle with one summary message.
import type { Message } from '../messages.js';
import { digestMiddle } from './middle-digest.js';
import { fitSummary } from './summary-text.js';
import { countTokens, isWithinTokenLimit } from './tokens.js';
import { assemble, planCompaction, type TranscriptPlan } from './transcript-plan.js';
import type { CompressionEngine, CompressOptionName, CompressOptions, CompressResult } from './types.js';

export class ExtractiveCompressor implements CompressionEngine {
  readonly name = 'extractive';
  readonly acceptedOptions: readonly CompressOptionName[] = ['keepLast', 'targetTokens'];

  async compress(messages: readonly Message[], options: CompressOptions = {}): Promise<CompressResult> {
    return extractiveCompress(messages, options);
  }
}

/** Synchronous core, shared with the LLM summarizer's fallback and its oversized-input digest. */
export function extractiveCompress(messages: readonly Message[], options: Pick<CompressOptions, 'keepLast' | 'targetTokens'>): CompressResult {
  const plan = planCompaction(messages, options.keepLast);
  if (!plan) return { messages: [...messages] };

  const warnings: string[] = [];
  const budget = summaryBudget(plan, options.targetTokens);
  if (budget !== undefined && budget <= 0) {
    warnings.push(`extractive: the messages kept verbatim already exceed targetTokens (${options.targetTokens}); summary reduced to its header`);
  }
  const compacted = assemble(plan, summaryMessage(fitSummary(digestMiddle(plan.middle), budget)));
  // Nothing gained (tiny middle, huge summary): hand back the input so the attempt is a no-op.
  // isWithinTokenLimit stops counting a 1 MB input as soon as it is known to be larger.
  const result = isWithinTokenLimit(messages, countTokens(compacted)) ? [...messages] : compacted;
  return warnings.length > 0 ? { messages: result, warnings } : { messages: result };
}

/**
 * The summary is an `assistant` message, not `user`: it is the agent's own recap, so the model
 * must not read it as a new human instruction, and a `user` summary right after the first human
 * turn would make two consecutive user messages (SPEC C8 does not count it as a human turn anyway).
 */
export function summaryMessage(content: string): Message {
  return { role: 'assistant', content };
}

/** Tokens left for the summary's text once everything kept verbatim (and the summary's framing) is counted. */
export function summaryBudget(plan: TranscriptPlan, targetTokens: number | undefined): number | undefined {
  if (targetTokens === undefined || !Number.isFinite(targetTokens)) return undefined;
  const withEmptySummary = assemble(plan, summaryMessage(''));
  return targetTokens - countTokens(withEmptySummary);
}
