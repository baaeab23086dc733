// The `chat` format (SPEC A1): OpenAI chat-completions messages, read as the API reads them.
// Validation lives in validate-chat.ts; this adapter assumes nothing beyond "an object" and
// reads every field defensively, so a verbatim unknown field can never make it throw.
import {
  asArgumentsText,
  clip,
  clipBlock,
  isRecord,
  joinTexts,
  partTexts,
  RENDER_ARGUMENT_CHARS,
  RENDER_CONTENT_CHARS,
  stringField,
  withoutSynthetic,
} from './json.js';
import { mergeContent } from './merge-text.js';
import { SUMMARY_PREFIX, type FormatAdapter, type Item, type ItemRole, type ToolCallRef } from './types.js';

export const CHAT_ROLES: readonly ItemRole[] = ['system', 'developer', 'user', 'assistant', 'tool'];

function roleOf(item: Item): ItemRole | undefined {
  const role = item.role;
  return typeof role === 'string' && (CHAT_ROLES as readonly string[]).includes(role) ? (role as ItemRole) : undefined;
}

/** Content text parts plus the assistant's `refusal` field. */
function messageTextOf(item: Item): string {
  const content = item.content;
  const texts = typeof content === 'string' ? [content] : Array.isArray(content) ? partTexts(content) : [];
  return joinTexts([...texts, stringField(item.refusal)]);
}

function isSummary(item: Item): boolean {
  return messageTextOf(item).trimStart().startsWith(SUMMARY_PREFIX);
}

/** `tool_calls` (function calls and other typed calls with an id) and the legacy `function_call`. */
function toolCallsOf(item: Item): ToolCallRef[] {
  if (item.role !== 'assistant') return [];
  const calls: ToolCallRef[] = [];
  if (Array.isArray(item.tool_calls)) {
    for (const raw of item.tool_calls) {
      if (!isRecord(raw)) continue;
      const id = stringField(raw.id);
      const type = stringField(raw.type) ?? 'function';
      // `function: {name, arguments}`; `custom: {name, input}`; any other type: its payload.
      const body = raw[type];
      const payload = isRecord(body) ? body : {};
      const name = stringField(payload.name) ?? type;
      const args = type === 'custom' ? payload.input : type === 'function' ? payload.arguments : body;
      calls.push(id === undefined ? { name, arguments: asArgumentsText(args) } : { id, name, arguments: asArgumentsText(args) });
    }
  }
  if (isRecord(item.function_call)) {
    const name = stringField(item.function_call.name);
    if (name !== undefined) calls.push({ name, arguments: asArgumentsText(item.function_call.arguments) });
  }
  return calls;
}

function toolResultIdOf(item: Item): string | undefined {
  return item.role === 'tool' ? stringField(item.tool_call_id) : undefined;
}

/** Name, content, refusal and every call's name and arguments: what the model reads (ids are not). */
function textOf(item: Item): string {
  const calls = toolCallsOf(item).map((c) => joinTexts([c.name, c.arguments]));
  return joinTexts([stringField(item.name), messageTextOf(item), ...calls]);
}

function render(item: Item): string {
  const role = roleOf(item) ?? 'unknown role';
  const resultOf = toolResultIdOf(item);
  const who = resultOf !== undefined ? `tool result for ${resultOf}` : typeof item.name === 'string' ? `${role} ${item.name}` : role;
  const calls = toolCallsOf(item).map((c) => `${c.name}(${clip(c.arguments, RENDER_ARGUMENT_CHARS)})${c.id ? ` [${c.id}]` : ''}`);
  const head = `[${who}]${item.synthetic === true ? ' (scaffolding)' : ''}${calls.length > 0 ? ` calls ${calls.join(', ')}` : ''}`;
  const text = clipBlock(messageTextOf(item), RENDER_CONTENT_CHARS);
  return text ? `${head}\n${text}` : head;
}

export const chatAdapter: FormatAdapter = {
  format: 'chat',
  roleOf,
  isInstruction: (item) => item.role === 'system' || item.role === 'developer',
  isHumanTurn: (item) => item.role === 'user' && item.synthetic !== true && !isSummary(item),
  isSummary,
  textOf,
  messageTextOf,
  toolCallsOf,
  toolResultIdOf,
  bindsToNext: () => false,
  // An assistant message: the agent's own recap. As `user` the model would read it as a new
  // instruction, and it would sit right after the first human turn (two user turns in a row).
  summaryItem: (text) => ({ role: 'assistant', content: text }),
  mergeHumanText: (into, anchor) => ({
    ...withoutSynthetic(into),
    role: 'user',
    content: mergeContent(anchor.content, into.content, 'text'),
  }),
  render,
};
