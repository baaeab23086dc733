// The C8 merge, shared by both formats: the human turn's content leads, the scaffolding follows.
import { isRecord } from './json.js';
import type { JsonValue } from './types.js';

/**
 * `anchor` then `into` as one content value. Two strings stay one string (a blank line between);
 * otherwise both become part arrays (a string turns into one text part of `textPartType`), so
 * images or files of either side are kept, in order.
 */
export function mergeContent(anchor: JsonValue | undefined, into: JsonValue | undefined, textPartType: string): JsonValue {
  if (typeof anchor === 'string' && typeof into === 'string') return into ? `${anchor}\n\n${into}` : anchor;
  if (typeof anchor === 'string' && (into === undefined || into === null)) return anchor;
  return [...asParts(anchor, textPartType), ...asParts(into, textPartType)];
}

function asParts(content: JsonValue | undefined, textPartType: string): JsonValue[] {
  if (typeof content === 'string') return content ? [{ type: textPartType, text: content }] : [];
  if (Array.isArray(content)) return content.map((p) => (isRecord(p) ? { ...p } : p));
  return [];
}
