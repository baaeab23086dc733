// Renders a digest as the summary's text, shrunk until it fits a token budget.
import { SUMMARY_PREFIX } from '../items/types.js';
import { SECTIONS, type Digest, type RoleCounts, type ToolUse } from './middle-digest.js';

/** Items per section when no budget asks for fewer. */
export const DEFAULT_MAX_ITEMS = 12;

export function summaryHeader(d: Digest): string {
  const roles = (['user', 'assistant', 'tool', 'system', 'developer', 'other'] as const satisfies readonly (keyof RoleCounts)[])
    .filter((r) => d.byRole[r] > 0)
    .map((r) => `${d.byRole[r]} ${r}`);
  const detail = roles.length > 0 ? ` (this pass: ${roles.join(', ')})` : '';
  return `${SUMMARY_PREFIX} Summary of ${d.messageCount} earlier messages${detail}, removed to save context.`;
}

/** The summary with at most `maxItems` per section: the most recent facts, decisions and tasks, the most used tools. */
export function renderSummary(d: Digest, maxItems: number): string {
  const lines = [summaryHeader(d)];
  section(lines, SECTIONS.facts, lastN(d.facts, maxItems), d.facts.length);
  section(lines, SECTIONS.decisions, lastN(d.decisions, maxItems), d.decisions.length);
  section(
    lines,
    SECTIONS.tools,
    mostUsed(d.tools, maxItems).map((t) => `${t.name} ×${t.count}`),
    d.tools.length,
  );
  section(
    lines,
    SECTIONS.openTasks,
    lastN(d.openTasks, maxItems).map((t) => `[ ] ${t}`),
    d.openTasks.length,
  );
  return lines.join('\n');
}

/**
 * The richest summary whose text fits `budgetTokens` (binary search over items per section;
 * fewer items never costs more tokens). Falls back to the header alone when nothing fits.
 */
export function fitSummary(d: Digest, budgetTokens: number | undefined, countText: (text: string) => number): string {
  const longest = Math.max(d.facts.length, d.decisions.length, d.tools.length, d.openTasks.length);
  let hi = Math.min(longest, DEFAULT_MAX_ITEMS);
  if (budgetTokens === undefined) return renderSummary(d, hi);
  let lo = 0;
  let best = renderSummary(d, 0);
  if (countText(best) > budgetTokens) return best;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const text = renderSummary(d, mid);
    if (countText(text) <= budgetTokens) {
      lo = mid;
      best = text;
    } else {
      hi = mid - 1;
    }
  }
  return best;
}

function section(lines: string[], heading: string, shown: string[], total: number): void {
  if (total === 0) return;
  lines.push(heading);
  if (shown.length < total) lines.push(`- … ${total - shown.length} more omitted`);
  for (const item of shown) lines.push(`- ${item}`);
}

function mostUsed(tools: readonly ToolUse[], max: number): ToolUse[] {
  // Stable sort keeps first-use order among equals, so output is deterministic.
  return [...tools].sort((a, b) => b.count - a.count).slice(0, max);
}

function lastN<T>(items: readonly T[], n: number): T[] {
  return n <= 0 ? [] : items.slice(-n);
}
