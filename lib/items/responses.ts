// The `responses` format (SPEC A1): Responses API input items and the OpenAI Agents SDK's
// `AgentInputItem`s (@openai/agents-core protocol). The two spell a call id differently
// (`call_id` in the API, `callId` in the SDK); both are read everywhere. Each known item type
// says what role produced it, what text the model sees in it, and which call it makes or answers.
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
import { SUMMARY_PREFIX, type FormatAdapter, type Item, type ItemRole, type JsonValue, type ToolCallRef } from './types.js';

export const MESSAGE_ROLES: readonly ItemRole[] = ['user', 'assistant', 'system', 'developer'];

interface ItemKind {
  /** Absent for items that stand for others (an `item_reference` can point at any role). */
  role?: ItemRole;
  /** The call this item makes. `paired`: its result is a separate item (else the result is inline). */
  call?: (item: Item) => { name: string; arguments: string; paired: boolean };
  /** The call id this item answers. */
  answers?: (item: Item) => string | undefined;
  /** What the model sees besides the call's name and arguments. */
  text?: (item: Item) => string;
}

const callIdOf = (item: Item): string | undefined => stringField(item.callId) ?? stringField(item.call_id);
const json = (value: JsonValue | undefined): string => (value === undefined || value === null ? '' : JSON.stringify(value));

/** A tool's output: a string, one legacy output part, or an array of parts; images and files carry no text. */
function outputText(output: JsonValue | undefined): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return joinTexts(partTexts(output));
  return isRecord(output) ? joinTexts(partTexts([output])) : '';
}

const paired = (name: string, args: (item: Item) => JsonValue | undefined) => (item: Item) => ({
  name,
  arguments: asArgumentsText(args(item)),
  paired: true,
});
const hosted = (name: (item: Item) => string, args: (item: Item) => JsonValue | undefined) => (item: Item) => ({
  name: name(item),
  arguments: asArgumentsText(args(item)),
  paired: false,
});
const named = (fallback: string) => (item: Item) => stringField(item.name) ?? fallback;
const result = (text: (item: Item) => string): ItemKind => ({ role: 'tool', answers: callIdOf, text });

/** Every item type of the Responses API and the Agents SDK that this service understands. */
const KINDS: Record<string, ItemKind> = {
  function_call: {
    role: 'assistant',
    call: (item) => ({ name: named('function')(item), arguments: asArgumentsText(item.arguments), paired: true }),
  },
  function_call_result: result((item) => outputText(item.output)),
  function_call_output: result((item) => outputText(item.output)),
  custom_tool_call: {
    role: 'assistant',
    call: (item) => ({ name: named('custom_tool')(item), arguments: asArgumentsText(item.input), paired: true }),
  },
  custom_tool_call_output: result((item) => outputText(item.output)),
  computer_call: { role: 'assistant', call: paired('computer', (item) => item.action ?? item.actions) },
  // A screenshot: image tokens, not text.
  computer_call_result: result(() => ''),
  computer_call_output: result(() => ''),
  shell_call: { role: 'assistant', call: paired('shell', (item) => item.action) },
  shell_call_output: result((item) =>
    Array.isArray(item.output)
      ? item.output.map((o) => (isRecord(o) ? joinTexts([stringField(o.stdout), stringField(o.stderr)]) : '')).join('\n')
      : outputText(item.output),
  ),
  local_shell_call: { role: 'assistant', call: paired('local_shell', (item) => item.action) },
  // The API documents this output's `id` as the id of the call it answers.
  local_shell_call_output: {
    role: 'tool',
    answers: (item) => callIdOf(item) ?? stringField(item.id),
    text: (item) => outputText(item.output),
  },
  apply_patch_call: { role: 'assistant', call: paired('apply_patch', (item) => item.operation) },
  apply_patch_call_output: result((item) => outputText(item.output)),
  program: { role: 'assistant', call: paired('program', (item) => item.code) },
  program_output: result((item) => outputText(item.output ?? item.result)),
  tool_search_call: { role: 'assistant', call: paired('tool_search', (item) => item.arguments) },
  tool_search_output: result((item) => json(item.tools)),
  mcp_approval_request: { role: 'assistant', call: paired('mcp_approval', (item) => item.arguments) },
  mcp_approval_response: {
    role: 'tool',
    answers: (item) => stringField(item.approval_request_id),
    text: (item) => stringField(item.reason) ?? '',
  },
  // Hosted tools run by the provider: the result travels inside the call item.
  hosted_tool_call: {
    role: 'assistant',
    call: hosted(named('hosted_tool'), (item) => item.arguments),
    text: (item) => outputText(item.output),
  },
  web_search_call: {
    role: 'assistant',
    call: hosted(
      () => 'web_search',
      (item) => item.action,
    ),
  },
  file_search_call: {
    role: 'assistant',
    call: hosted(
      () => 'file_search',
      (item) => item.queries,
    ),
    text: (item) => (Array.isArray(item.results) ? joinTexts(partTexts(item.results)) : ''),
  },
  code_interpreter_call: {
    role: 'assistant',
    call: hosted(
      () => 'code_interpreter',
      (item) => item.code,
    ),
    text: (item) =>
      Array.isArray(item.outputs) ? joinTexts(item.outputs.map((o) => (isRecord(o) ? stringField(o.logs) : undefined))) : '',
  },
  // `result` is the generated image (base64): image tokens, not text.
  image_generation_call: {
    role: 'assistant',
    call: hosted(
      () => 'image_generation',
      (item) => item.revised_prompt,
    ),
  },
  mcp_call: {
    role: 'assistant',
    call: hosted(named('mcp_tool'), (item) => item.arguments),
    text: (item) => joinTexts([stringField(item.output), typeof item.error === 'string' ? item.error : json(item.error)]),
  },
  mcp_list_tools: { role: 'assistant', text: (item) => json(item.tools) },
  additional_tools: { role: 'developer', text: (item) => json(item.tools) },
  // Encrypted or opaque to us: the model sees something, we cannot count it.
  reasoning: {
    role: 'assistant',
    text: (item) => joinTexts([item.summary, item.content, item.rawContent].flatMap((p) => (Array.isArray(p) ? partTexts(p) : []))),
  },
  compaction: { role: 'assistant' },
  item_reference: {},
  compaction_trigger: {},
};

/** `type: 'message'`, or the EasyInputMessage form: a `role` and no `type`. */
function isMessage(item: Item): boolean {
  return item.type === 'message' || (item.type === undefined && typeof item.role === 'string');
}

function kindOf(item: Item): ItemKind | undefined {
  return typeof item.type === 'string' && Object.hasOwn(KINDS, item.type) ? KINDS[item.type] : undefined;
}

function roleOf(item: Item): ItemRole | undefined {
  if (isMessage(item)) return (MESSAGE_ROLES as readonly JsonValue[]).includes(item.role ?? null) ? (item.role as ItemRole) : undefined;
  return kindOf(item)?.role;
}

function messageTextOf(item: Item): string {
  if (!isMessage(item)) return '';
  const content = item.content;
  return typeof content === 'string' ? content : Array.isArray(content) ? joinTexts(partTexts(content)) : '';
}

function isSummary(item: Item): boolean {
  return messageTextOf(item).trimStart().startsWith(SUMMARY_PREFIX);
}

function toolCallsOf(item: Item): ToolCallRef[] {
  const call = kindOf(item)?.call?.(item);
  if (!call) return [];
  // mcp_approval_request is answered by `approval_request_id`, which names the request's `id`.
  const id = call.paired ? (item.type === 'mcp_approval_request' ? stringField(item.id) : callIdOf(item)) : undefined;
  return id === undefined ? [{ name: call.name, arguments: call.arguments }] : [{ id, name: call.name, arguments: call.arguments }];
}

function toolResultIdOf(item: Item): string | undefined {
  return kindOf(item)?.answers?.(item);
}

/** Unknown item types are counted by their JSON (less `type`/`id`): an upper bound of what a model could see. */
function textOf(item: Item): string {
  if (isMessage(item)) return messageTextOf(item);
  const kind = kindOf(item);
  if (!kind) {
    const { type: _type, id: _id, synthetic: _synthetic, ...rest } = item;
    return Object.keys(rest).length === 0 ? '' : JSON.stringify(rest);
  }
  const call = kind.call?.(item);
  return joinTexts([call?.name, call?.arguments, kind.text?.(item)]);
}

function render(item: Item): string {
  if (isMessage(item)) {
    const head = `[${roleOf(item) ?? 'unknown role'}]${item.synthetic === true ? ' (scaffolding)' : ''}`;
    const text = clipBlock(messageTextOf(item), RENDER_CONTENT_CHARS);
    return text ? `${head}\n${text}` : head;
  }
  const kind = kindOf(item);
  const type = typeof item.type === 'string' ? item.type : 'item';
  if (!kind) return `[${type}] ${clip(textOf(item), RENDER_ARGUMENT_CHARS)}`;
  const [call] = toolCallsOf(item);
  const answered = toolResultIdOf(item);
  const head = call
    ? `[assistant] calls ${call.name}(${clip(call.arguments, RENDER_ARGUMENT_CHARS)})${call.id ? ` [${call.id}]` : ''}`
    : answered !== undefined
      ? `[tool result for ${answered}${typeof item.name === 'string' ? ` (${item.name})` : ''}]`
      : `[${kind.role ?? 'item'} ${type}]`;
  const text = clipBlock(kind.text?.(item) ?? '', RENDER_CONTENT_CHARS);
  return text ? `${head}\n${text}` : head;
}

export const responsesAdapter: FormatAdapter = {
  format: 'responses',
  roleOf,
  isInstruction: (item) => isMessage(item) && (item.role === 'system' || item.role === 'developer'),
  isHumanTurn: (item) => isMessage(item) && item.role === 'user' && item.synthetic !== true && !isSummary(item),
  isSummary,
  textOf,
  messageTextOf,
  toolCallsOf,
  toolResultIdOf,
  bindsToNext: (item) => item.type === 'reasoning',
  // The Agents SDK's own `assistant(text)` item (helpers/message): valid SDK input and API input.
  summaryItem: (text) => ({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }),
  mergeHumanText: (into, anchor) => ({
    ...withoutSynthetic(into),
    role: 'user',
    content: mergeContent(anchor.content, into.content, 'input_text'),
  }),
  render,
};
