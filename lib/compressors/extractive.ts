// Deterministic, offline compaction engine: keeps the instructions, the first human turn and
// the last K items verbatim, and replaces the middle with one summary item of the session's
// format (SPEC A2).
import { adapterFor } from '../items/adapters.js';
import { loadTokenCounter, type TokenCounter } from '../items/tokens.js';
import type { FormatAdapter, Item } from '../items/types.js';
import { digestMiddle } from './middle-digest.js';
import { fitSummary } from './summary-text.js';
import { assemble, planCompaction, type TranscriptPlan } from './transcript-plan.js';
import type { CompressionEngine, CompressOptionName, CompressOptions, CompressResult, Transcript } from './types.js';

export class ExtractiveCompressor implements CompressionEngine {
  readonly name = 'extractive';
  readonly acceptedOptions: readonly CompressOptionName[] = ['keepLast', 'targetTokens'];

  async compress(transcript: Transcript, options: CompressOptions = {}): Promise<CompressResult> {
    return extractiveCompress(transcript, options, await loadTokenCounter());
  }
}

/** Synchronous core, shared with the LLM summarizer's fallback. */
export function extractiveCompress(
  transcript: Transcript,
  options: Pick<CompressOptions, 'keepLast' | 'targetTokens'>,
  counter: TokenCounter,
): CompressResult {
  const adapter = adapterFor(transcript.format);
  const { items } = transcript;
  const plan = planCompaction(items, adapter, options.keepLast);
  if (!plan) return { items: [...items] };

  const warnings: string[] = [];
  const budget = summaryBudget(plan, options.targetTokens, adapter, counter);
  if (budget !== undefined && budget <= 0) {
    warnings.push(
      `extractive: the items kept verbatim already exceed targetTokens (${options.targetTokens}); summary reduced to its header`,
    );
  }
  const text = fitSummary(digestMiddle(plan.middle, adapter), budget, counter.countText);
  const compacted = assemble(plan, adapter.summaryItem(text));
  // Nothing gained (tiny middle, huge summary): hand back the input so the attempt is a no-op.
  // isWithinLimit stops counting a 1 MB input as soon as it is known to be larger.
  const result = counter.isWithinLimit(items, adapter, counter.countItems(compacted, adapter)) ? [...items] : compacted;
  return warnings.length > 0 ? { items: result, warnings } : { items: result };
}

/** Tokens left for the summary's text once everything kept verbatim (and the summary's framing) is counted. */
export function summaryBudget(
  plan: TranscriptPlan,
  targetTokens: number | undefined,
  adapter: FormatAdapter,
  counter: TokenCounter,
): number | undefined {
  if (targetTokens === undefined || !Number.isFinite(targetTokens)) return undefined;
  const withEmptySummary: Item[] = assemble(plan, adapter.summaryItem(''));
  return targetTokens - counter.countItems(withEmptySummary, adapter);
}
