// Transcript items in both formats (SPEC A1, A2): the adapters, validation, pairing and token counts.
import { chatAdapter } from './chat.js';
import { responsesAdapter } from './responses.js';
import type { FormatAdapter, ItemFormat } from './types.js';

export * from './types.js';
export { chatAdapter, CHAT_ROLES } from './chat.js';
export { responsesAdapter, MESSAGE_ROLES } from './responses.js';
export { pairCalls, type CallPairing } from './pairing.js';
export { describeProblem, validateItems, type ValidationResult } from './validate.js';
export * from './tokens.js';

const ADAPTERS: Record<ItemFormat, FormatAdapter> = { chat: chatAdapter, responses: responsesAdapter };

export function adapterFor(format: ItemFormat): FormatAdapter {
  const adapter = ADAPTERS[format];
  if (!adapter) throw new TypeError(`unknown item format ${JSON.stringify(format)}; expected chat or responses`);
  return adapter;
}
