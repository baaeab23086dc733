// Real token counts (not chars/4) for budgets and "did compaction shrink it" checks.
// o200k_base is the encoding of the current OpenAI chat models (gpt-4o, gpt-4.1, o-series,
// gpt-5); cl100k_base would over-count those by ~10-15% on prose and code alike.
import { countTokens as countEncodedTokens } from 'gpt-tokenizer/encoding/o200k_base';
import type { Message } from '../messages.js';
import { toolCallsOf } from './tool-calls.js';

// Transcripts are client text: a literal "<|endoftext|>" must count as plain text,
// not make the tokenizer throw (its default disallows special tokens).
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/** OpenAI chat format: <|im_start|>{role}<|im_sep|>{content}<|im_end|> = 3 tokens around each message. */
export const TOKENS_PER_MESSAGE = 3;
/** Every reply is primed with <|im_start|>assistant<|im_sep|>. */
export const TOKENS_PER_REPLY_PRIMER = 3;

export function countTextTokens(text: string): number {
  return text ? countEncodedTokens(text, PLAIN_TEXT) : 0;
}

/** Tokens one message costs inside a chat request (framing, role, name, content, tool calls). */
export function countMessageTokens(message: Message): number {
  let tokens = TOKENS_PER_MESSAGE + countTextTokens(message.role) + countTextTokens(message.content);
  if (typeof message.name === 'string') tokens += countTextTokens(message.name) + 1;
  if (typeof message.tool_call_id === 'string') tokens += countTextTokens(message.tool_call_id);
  for (const call of toolCallsOf(message)) {
    tokens += countTextTokens(call.name) + countTextTokens(call.arguments);
  }
  return tokens;
}

/** Token count of a whole chat request, as the OpenAI chat format bills it. */
export function countTokens(messages: readonly Message[]): number {
  if (messages.length === 0) return 0;
  let total = TOKENS_PER_REPLY_PRIMER;
  for (const m of messages) total += countMessageTokens(m);
  return total;
}

/** True when the chat fits `limit` tokens; stops counting as soon as it does not. */
export function isWithinTokenLimit(messages: readonly Message[], limit: number): boolean {
  let total = messages.length === 0 ? 0 : TOKENS_PER_REPLY_PRIMER;
  for (const m of messages) {
    total += countMessageTokens(m);
    if (total > limit) return false;
  }
  return true;
}
