// The adapter of each item format (kept apart from validation so engines import no schemas).
import { chatAdapter } from './chat.js';
import { responsesAdapter } from './responses.js';
import type { FormatAdapter, ItemFormat } from './types.js';

const ADAPTERS: Record<ItemFormat, FormatAdapter> = { chat: chatAdapter, responses: responsesAdapter };

export function adapterFor(format: ItemFormat): FormatAdapter {
  const adapter = Object.hasOwn(ADAPTERS, format) ? ADAPTERS[format] : undefined;
  if (!adapter) throw new TypeError(`unknown item format ${JSON.stringify(format)}; expected chat or responses`);
  return adapter;
}
