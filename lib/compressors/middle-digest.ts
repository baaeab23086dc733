// Deterministic extraction of what matters from the messages a summary replaces:
// key facts, decisions, tool calls (by name) and open tasks. Pure text heuristics, no network.
import { SUMMARY_PREFIX, type Message } from '../messages.js';
import { toolCallsOf } from './tool-calls.js';

export interface ToolUse {
  name: string;
  count: number;
}

export interface Digest {
  /** Messages this digest covers, including those covered by earlier summaries it absorbed. */
  messageCount: number;
  byRole: Record<Message['role'], number>;
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

export function digestMiddle(middle: readonly Message[]): Digest {
  const acc = new Accumulator();
  const calledIds = new Set<string>();
  for (const m of middle) {
    if (m.content.startsWith(SUMMARY_PREFIX)) {
      acc.absorbPriorSummary(m.content);
      continue;
    }
    acc.count(m.role);
    for (const call of toolCallsOf(m)) {
      acc.tool(call.name);
      if (call.id) calledIds.add(call.id);
    }
    if (m.role === 'tool') {
      // A named result whose call we did not see still tells us which tool ran.
      const callId = typeof m.tool_call_id === 'string' ? m.tool_call_id : undefined;
      if (typeof m.name === 'string' && (!callId || !calledIds.has(callId))) acc.tool(m.name);
      continue; // tool output is data (file contents, logs), not the conversation's facts or tasks
    }
    acc.readText(m);
  }
  return acc.result();
}

class Accumulator {
  private messageCount = 0;
  private readonly byRole: Record<Message['role'], number> = { system: 0, user: 0, assistant: 0, tool: 0 };
  private readonly facts = new OrderedSet();
  private readonly decisions = new OrderedSet();
  private readonly openTasks = new OrderedSet();
  private readonly tools = new Map<string, number>();

  count(role: Message['role']): void {
    this.messageCount++;
    this.byRole[role]++;
  }

  tool(name: string, times = 1): void {
    this.tools.set(name, (this.tools.get(name) ?? 0) + times);
  }

  readText(m: Message): void {
    let inFence = false;
    let inNextSteps = false;
    let firstUserLine = m.role === 'user' && m.synthetic !== true;
    for (const rawLine of m.content.split('\n')) {
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
        else if (FACT.test(sentence)) this.facts.add(m.role === 'user' ? `User: ${sentence}` : sentence);
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
    const item = clip(text.trim());
    if (!item) return;
    const key = normalize(item);
    this.items.delete(key);
    this.items.set(key, item);
  }

  delete(text: string): void {
    this.items.delete(normalize(clip(text.trim())));
  }

  values(): string[] {
    return [...this.items.values()];
  }
}

function normalize(text: string): string {
  return text.toLowerCase().replace(/\s+/g, ' ');
}

export function clip(text: string, max = MAX_ITEM_CHARS): string {
  const oneLine = text.replace(/\s+/g, ' ');
  return oneLine.length <= max ? oneLine : `${oneLine.slice(0, max - 1).trimEnd()}…`;
}

function sentences(line: string): string[] {
  return line.split(/(?<=[.!?])\s+(?=[A-Z0-9"'`(])/).map((s) => s.trim()).filter(Boolean);
}
