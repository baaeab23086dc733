// Small readers for client JSON: items are kept verbatim, so every field is read defensively.
import type { Item, JsonValue } from './types.js';

/** Longest tool argument and content an adapter renders per item for a summarizer. */
export const RENDER_ARGUMENT_CHARS = 500;
export const RENDER_CONTENT_CHARS = 4_000;

export type JsonObject = { [key: string]: JsonValue | undefined };

export function isRecord(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function stringField(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** Non-empty texts joined by newlines (what a model sees as separate lines). */
export function joinTexts(texts: readonly (string | undefined)[]): string {
  return texts.filter((t): t is string => typeof t === 'string' && t.length > 0).join('\n');
}

/** Arguments as the model wrote them: a string as is, anything else JSON-encoded ('' when absent). */
export function asArgumentsText(value: JsonValue | undefined): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** One line of at most `max` characters (whitespace collapsed), cut with an ellipsis. */
export function clip(text: string, max: number): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length <= max ? oneLine : `${oneLine.slice(0, max - 1).trimEnd()}…`;
}

/** A block of at most `max` characters, line breaks kept, with a note of how much was cut. */
export function clipBlock(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)} …[${text.length - max} chars cut]`;
}

/** The texts of content parts: `text` and `refusal` strings, and an audio part's transcript. */
export function partTexts(parts: readonly JsonValue[]): string[] {
  const texts: string[] = [];
  for (const part of parts) {
    if (!isRecord(part)) continue;
    const text = stringField(part.text) ?? stringField(part.refusal) ?? stringField(part.transcript);
    if (text) texts.push(text);
  }
  return texts;
}

/** A shallow copy without our `synthetic` flag (the C8 merge makes scaffolding a human turn). */
export function withoutSynthetic(item: Item): Item {
  const { synthetic: _dropped, ...rest } = item;
  return rest;
}
