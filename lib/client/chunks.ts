// How items are split into appends: the document's limits (checked against it by a test).
import type { Item } from './types.js';

/** functions/openapi.json AppendMessagesRequest.messages.maxItems (checked against the document by a test). */
export const MAX_ITEMS_PER_APPEND = 98;
/** Under the 1 MiB body limit with room for the envelope: items are split so every append fits. */
export const MAX_APPEND_BODY_BYTES = 1_000_000;
/** `tail` takes at most this many (the document's maximum). */
export const MAX_TAIL = 1000;

/** Splits items into appends of at most 98 items and ~1 MB of JSON each, keeping their order. */
export function* chunks(items: readonly Item[]): Generator<Item[]> {
  const encoder = new TextEncoder();
  let chunk: Item[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = encoder.encode(JSON.stringify(item)).length + 1;
    if (chunk.length > 0 && (chunk.length >= MAX_ITEMS_PER_APPEND || bytes + size > MAX_APPEND_BODY_BYTES)) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(item);
    bytes += size;
  }
  if (chunk.length > 0) yield chunk;
}
