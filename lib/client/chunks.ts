// How items are split into appends. The service takes any item count in one atomic append (A7),
// up to a 5 MB body, so only items whose JSON passes that are split (they cannot go in one request).
import type { Item } from './types.js';

/** The service's body limit (5,242,880 bytes, SPEC A7) less room for the `{"messages":[...]}` envelope. */
export const MAX_APPEND_BODY_BYTES = 5_242_880 - 4_096;
/** `tail` takes at most this many (the document's maximum). */
export const MAX_TAIL = 1000;

/** Splits items into appends of at most MAX_APPEND_BODY_BYTES of JSON each (one append below it), keeping their order. */
export function* chunks(items: readonly Item[]): Generator<Item[]> {
  const encoder = new TextEncoder();
  let chunk: Item[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = encoder.encode(JSON.stringify(item)).length + 1;
    if (chunk.length > 0 && bytes + size > MAX_APPEND_BODY_BYTES) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(item);
    bytes += size;
  }
  if (chunk.length > 0) yield chunk;
}
