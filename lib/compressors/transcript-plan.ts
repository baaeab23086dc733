// Splits a transcript into what every engine keeps verbatim and the middle it may replace
// with one summary: leading system prompt(s), the first human turn, the last K messages.
import { SUMMARY_PREFIX, type Message } from '../messages.js';

export const DEFAULT_KEEP_LAST = 6;
/** Replacing fewer middle messages than this with a summary cannot save anything. */
const MIN_MIDDLE_MESSAGES = 2;

export interface TranscriptPlan {
  head: Message[];
  firstHuman: Message | undefined;
  middle: Message[];
  tail: Message[];
}

/** A real human turn: not synthetic scaffolding and not an earlier summary sent as `user` (SPEC C8). */
export function isHumanTurn(m: Message): boolean {
  return m.role === 'user' && m.synthetic !== true && !m.content.startsWith(SUMMARY_PREFIX);
}

export function resolveKeepLast(keepLast: number | undefined): number {
  return keepLast !== undefined && Number.isInteger(keepLast) && keepLast >= 0 ? keepLast : DEFAULT_KEEP_LAST;
}

/** The plan, or undefined when there is nothing worth compacting. */
export function planCompaction(messages: readonly Message[], keepLast?: number): TranscriptPlan | undefined {
  let headEnd = 0;
  while (headEnd < messages.length && messages[headEnd]?.role === 'system') headEnd++;

  let tailStart = Math.max(headEnd, messages.length - resolveKeepLast(keepLast));
  // Tool results belong to the assistant message that called them: never start the tail
  // on a result whose call would be summarized away (an API rejects orphan tool results).
  while (tailStart > headEnd && messages[tailStart]?.role === 'tool') tailStart--;

  let firstHumanIndex = -1;
  for (let i = headEnd; i < tailStart; i++) {
    if (isHumanTurn(messages[i] as Message)) {
      firstHumanIndex = i;
      break;
    }
  }

  const middle: Message[] = [];
  for (let i = headEnd; i < tailStart; i++) {
    if (i !== firstHumanIndex) middle.push(messages[i] as Message);
  }
  if (middle.length < MIN_MIDDLE_MESSAGES) return undefined;

  return {
    head: messages.slice(0, headEnd),
    firstHuman: firstHumanIndex >= 0 ? messages[firstHumanIndex] : undefined,
    middle,
    tail: messages.slice(tailStart),
  };
}

/** The compacted transcript: head, first human turn, the summary, then the tail. */
export function assemble(plan: TranscriptPlan, summary: Message): Message[] {
  return [
    ...plan.head,
    ...(plan.firstHuman ? [plan.firstHuman] : []),
    summary,
    ...plan.tail,
  ].map((m) => ({ ...m }));
}
