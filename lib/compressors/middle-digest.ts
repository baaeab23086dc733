// Deterministic extraction of what matters from the items a summary replaces: key facts,
// decisions, tool calls (by name) and open tasks. Pure text heuristics over the format's
// adapter (message text only: tool arguments and outputs are data, not the conversation).
import { clip } from '../items/json.js';
import type { FormatAdapter, Item, ItemRole } from '../items/types.js';

/** Items counted per role; `other` is an item of a type the format does not define. */
export type RoleCounts = Record<ItemRole | 'other', number>;

export interface ToolUse {
  name: string;
  count: number;
}

export interface Digest {
  /** Items this digest covers, including those covered by earlier summaries it absorbed. */
  messageCount: number;
  byRole: RoleCounts;
  facts: string[];
  decisions: string[];
  tools: ToolUse[];
  openTasks: string[];
}

/** Section headings of the rendered summary; also how an earlier summary is read back. */
export const SECTIONS = {
  facts: 'Key facts:',
  decisions: 'Decisions:',
  tools: 'Tool calls:',
  openTasks: 'Open tasks:',
} as const;

/** Longest single item kept; long lines are cut, not dropped. */
export const MAX_ITEM_CHARS = 200;

const UNCHECKED = /^\s*(?:[-*+]|\d+[.)])\s*\[ \]\s+(.+)$/;
const CHECKED = /^\s*(?:[-*+]|\d+[.)])\s*\[[xX]\]\s+(.+)$/;
const TODO = /\b(?:TODO|FIXME)\b[\s:—–-]*(.+)$/;
const NEXT_STEP = /\bnext steps?\b\s*[:—–-]?\s*(.*)$/i;
const BULLET = /^\s*(?:[-*+]|\d+[.)])\s+(.+)$/;
const DECISION = /\b(?:decided|decision|we will|we'll|let's go with|going with|agreed|chose|chosen|settled on|opted|will use)\b/i;
const FACT = /\b(?:error|fails?|failed|found|root cause|because|important|note|must|requires?|located|version|deadline|constraint)\b/i;
const PRIOR_HEADER = /Summary of (\d+) earlier messages/;
const PRIOR_TOOL = /^(.+?) ×(\d+)$/;

export function digestMiddle(middle: readonly Item[], adapter: FormatAdapter): Digest {
  const acc = new Accumulator();
  const calledIds = new Set<string>();
  for (const item of middle) {
    if (adapter.isSummary(item)) {
      acc.absorbPriorSummary(adapter.messageTextOf(item));
      continue;
    }
    acc.count(adapter.roleOf(item) ?? 'other');
    for (const call of adapter.toolCallsOf(item)) {
      acc.tool(call.name);
      if (call.id) calledIds.add(call.id);
    }
    const answers = adapter.toolResultIdOf(item);
    if (answers !== undefined) {
      // A named result whose call we did not see still tells us which tool ran.
      if (typeof item.name === 'string' && !calledIds.has(answers)) acc.tool(item.name);
      continue; // tool output is data (file contents, logs), not the conversation's facts or tasks
    }
    acc.readText(adapter.messageTextOf(item), adapter.roleOf(item), adapter.isHumanTurn(item));
  }
  return acc.result();
}

class Accumulator {
  private messageCount = 0;
  private readonly byRole: RoleCounts = { system: 0, developer: 0, user: 0, assistant: 0, tool: 0, other: 0 };
  private readonly facts = new OrderedSet();
  private readonly decisions = new OrderedSet();
  private readonly openTasks = new OrderedSet();
  private readonly tools = new Map<string, number>();

  count(role: keyof RoleCounts): void {
    this.messageCount++;
    this.byRole[role]++;
  }

  tool(name: string, times = 1): void {
    this.tools.set(name, (this.tools.get(name) ?? 0) + times);
  }

  readText(text: string, role: ItemRole | undefined, human: boolean): void {
    let inFence = false;
    let inNextSteps = false;
    let firstUserLine = human;
    for (const rawLine of text.split('\n')) {
      const line = rawLine.trim();
      if (line.startsWith('```')) {
        inFence = !inFence;
        continue;
      }
      if (inFence) continue;
      if (!line) {
        inNextSteps = false;
        continue;
      }
      if (firstUserLine) {
        // What the human asked for is the most important fact of their turn.
        this.facts.add(`User: ${line}`);
        firstUserLine = false;
        if (!TODO.test(line) && !UNCHECKED.test(line)) continue;
      }
      if (this.readTask(line, inNextSteps)) continue;
      const next = NEXT_STEP.exec(line);
      if (next) {
        if (next[1]) this.openTasks.add(next[1]);
        else inNextSteps = true; // "Next steps:" heading: the bullets below are the tasks
        continue;
      }
      for (const sentence of sentences(line)) {
        if (DECISION.test(sentence)) this.decisions.add(sentence);
        else if (FACT.test(sentence)) this.facts.add(role === 'user' ? `User: ${sentence}` : sentence);
      }
    }
  }

  /** Checkbox and TODO lines; a checked box closes the open task with the same text. */
  private readTask(line: string, inNextSteps: boolean): boolean {
    const done = CHECKED.exec(line);
    if (done?.[1]) {
      this.openTasks.delete(done[1]);
      return true;
    }
    const open = UNCHECKED.exec(line) ?? TODO.exec(line) ?? (inNextSteps ? BULLET.exec(line) : null);
    if (open?.[1]) {
      this.openTasks.add(open[1]);
      return true;
    }
    return false;
  }

  /** Carry an earlier compaction summary forward instead of summarizing the summary. */
  absorbPriorSummary(content: string): void {
    const covered = PRIOR_HEADER.exec(content);
    if (covered?.[1]) this.messageCount += Number(covered[1]);
    let section: keyof typeof SECTIONS | undefined;
    for (const rawLine of content.split('\n')) {
      const line = rawLine.trim();
      const heading = (Object.keys(SECTIONS) as (keyof typeof SECTIONS)[]).find((k) => SECTIONS[k] === line);
      if (heading) {
        section = heading;
        continue;
      }
      if (!section || !line.startsWith('- ') || line.startsWith('- …')) continue;
      const item = line.slice(2);
      if (section === 'tools') {
        const m = PRIOR_TOOL.exec(item);
        if (m?.[1]) this.tool(m[1], Number(m[2]));
      } else if (section === 'openTasks') {
        this.openTasks.add(item.replace(/^\[ \]\s*/, ''));
      } else {
        this[section].add(item);
      }
    }
  }

  result(): Digest {
    return {
      messageCount: this.messageCount,
      byRole: { ...this.byRole },
      facts: this.facts.values(),
      decisions: this.decisions.values(),
      tools: [...this.tools].map(([name, count]) => ({ name, count })),
      openTasks: this.openTasks.values(),
    };
  }
}

/** Insertion-ordered, deduplicated by normalized text; a re-added item moves to the end (most recent). */
class OrderedSet {
  private readonly items = new Map<string, string>();

  add(text: string): void {
    const item = clip(text, MAX_ITEM_CHARS);
    if (!item) return;
    const key = normalize(item);
    this.items.delete(key);
    this.items.set(key, item);
  }

  delete(text: string): void {
    this.items.delete(normalize(clip(text, MAX_ITEM_CHARS)));
  }

  values(): string[] {
    return [...this.items.values()];
  }
}

function normalize(text: string): string {
  return text.toLowerCase().replace(/\s+/g, ' ');
}

function sentences(line: string): string[] {
  return line
    .split(/(?<=[.!?])\s+(?=[A-Z0-9"'`(])/)
    .map((s) => s.trim())
    .filter(Boolean);
}
