// Human anchor (SPEC C8): chat templates reject a context with no user turn, and a summary
// or scaffolding is not the human's request. If compaction dropped every real user turn,
// put the last one back without creating two consecutive user roles.
import { SUMMARY_PREFIX, type Message } from '../messages.js';

function isSummary(m: Message): boolean {
  return typeof m.content === 'string' && m.content.trimStart().startsWith(SUMMARY_PREFIX);
}

/** A human turn: role user, not synthetic scaffolding, not a summary pinned to role user. */
export function isRealUserMessage(m: Message): boolean {
  return m.role === 'user' && m.synthetic !== true && !isSummary(m);
}

export function hasRealUserMessage(messages: readonly Message[]): boolean {
  return messages.some(isRealUserMessage);
}

export interface AnchorResult {
  messages: Message[];
  /** How the anchor came back: not needed, inserted as its own turn, merged into a user-role neighbour. */
  restored: 'none' | 'inserted' | 'merged';
}

/**
 * Returns `compacted` with the last real user turn of `input` restored when `compacted` has
 * none. Never mutates its arguments.
 */
export function restoreHumanAnchor(compacted: readonly Message[], input: readonly Message[]): AnchorResult {
  const out = compacted.map((m) => ({ ...m }));
  if (hasRealUserMessage(out)) return { messages: out, restored: 'none' };
  const anchor = [...input].reverse().find(isRealUserMessage);
  if (!anchor) return { messages: out, restored: 'none' };
  return insertAnchor(out, { ...anchor });
}

/**
 * Places `anchor` right after the last summary/system message (the compacted head, before the
 * kept tail) or the nearest slot with no user neighbour and no tool result right after it.
 * When every slot touches a user turn, merges into the nearest user-role message, leading with
 * the human text and dropping the synthetic flag.
 */
export function insertAnchor(messages: Message[], anchor: Message): AnchorResult {
  const lastHead = messages.findLastIndex((m) => m.role === 'system' || isSummary(m));
  const preferred = lastHead + 1;
  const slots = [
    ...range(preferred, messages.length),
    ...range(0, preferred - 1).reverse(),
  ];
  const free = (i: number): boolean => {
    const prev = messages[i - 1];
    const next = messages[i];
    return prev?.role !== 'user' && next?.role !== 'user' && next?.role !== 'tool';
  };
  const slot = slots.find(free);
  if (slot !== undefined) {
    messages.splice(slot, 0, anchor);
    return { messages, restored: 'inserted' };
  }
  // No free slot means at least one user-role neighbour exists: merge into the nearest one.
  const target = [...range(preferred, messages.length - 1), ...range(0, preferred - 1).reverse()].find(
    (i) => messages[i]?.role === 'user',
  );
  if (target === undefined) {
    // Only reachable when every slot is blocked by tool results: append as the last turn.
    messages.push(anchor);
    return { messages, restored: 'inserted' };
  }
  const into = messages[target]!;
  const { synthetic: _dropped, ...rest } = into;
  messages[target] = { ...rest, role: 'user', content: `${anchor.content}\n\n${into.content}` };
  return { messages, restored: 'merged' };
}

function range(from: number, toInclusive: number): number[] {
  const r: number[] = [];
  for (let i = Math.max(0, from); i <= toInclusive; i++) r.push(i);
  return r;
}
