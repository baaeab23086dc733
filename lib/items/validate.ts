// Item validation for the API (SPEC A1): the first malformed item, named by its index and the
// field inside it. The caller has already parsed the JSON and bounded its length, depth and
// numbers; this checks what the session's format defines and keeps everything else verbatim.
import { validateChatItem } from './validate-chat.js';
import { validateResponsesItem } from './validate-responses.js';
import { joinPath, type FieldProblem } from './validate-shared.js';
import type { Item, ItemFormat, ItemProblem } from './types.js';

export type ValidationResult = { ok: true; items: Item[] } | { ok: false; problem: ItemProblem };

const CHECKS: Record<ItemFormat, (item: unknown) => FieldProblem | undefined> = {
  chat: validateChatItem,
  responses: validateResponsesItem,
};

/**
 * `items` are the input's own objects, unchanged (validation never copies, strips or reorders),
 * so what a client appends is exactly what it reads back.
 */
export function validateItems(format: ItemFormat, value: unknown): ValidationResult {
  const check = CHECKS[format];
  if (!check) throw new TypeError(`unknown item format ${JSON.stringify(format)}`);
  if (!Array.isArray(value)) return { ok: false, problem: { index: -1, path: '', message: 'expected an array of items' } };
  for (let index = 0; index < value.length; index++) {
    const problem = check(value[index]);
    if (problem) return { ok: false, problem: { index, ...problem } };
  }
  return { ok: true, items: value as Item[] };
}

/** `messages[3].tool_calls[0].id: missing; expected a string` (the request's body field is `messages`). */
export function describeProblem(problem: ItemProblem, field = 'messages'): string {
  const where = problem.index < 0 ? field : joinPath(`${field}[${problem.index}]`, problem.path);
  return `${where}: ${problem.message}`;
}
