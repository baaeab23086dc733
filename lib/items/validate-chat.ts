// Validation of one `chat` item: what the chat-completions API defines, nothing more.
// Known content-part types are checked in any role (which part a role may carry is the
// model's business, not the store's); unknown part types, tool-call types and fields pass.
import * as z from 'zod/mini';
import { isRecord } from './json.js';
import { CHAT_ROLES } from './chat.js';
import {
  choiceProblem,
  contentProblem,
  kindOf,
  nullableString,
  optionalString,
  schemaProblem,
  syntheticFlag,
  type FieldProblem,
  type Schema,
} from './validate-shared.js';

const CHAT_PARTS: Record<string, Schema> = {
  text: z.looseObject({ text: z.string() }),
  image_url: z.looseObject({ image_url: z.looseObject({ url: z.string(), detail: optionalString }) }),
  input_audio: z.looseObject({ input_audio: z.looseObject({ data: z.string(), format: z.string() }) }),
  file: z.looseObject({ file: z.looseObject({ file_data: optionalString, file_id: optionalString, filename: optionalString }) }),
  refusal: z.looseObject({ refusal: z.string() }),
};

const common = { name: optionalString, ...syntheticFlag };

const ROLE_SCHEMAS: Record<string, Schema> = {
  system: z.looseObject(common),
  developer: z.looseObject(common),
  user: z.looseObject(common),
  tool: z.looseObject({ ...common, tool_call_id: z.string() }),
  assistant: z.looseObject({
    ...common,
    refusal: nullableString,
    // Every call needs an id and a type; a `function` call is checked below, other types (`custom`, ...) pass.
    tool_calls: z.optional(z.array(z.looseObject({ id: z.string(), type: z.string() }))),
    function_call: z.optional(z.nullable(z.looseObject({ name: z.string(), arguments: z.string() }))),
    audio: z.optional(z.nullable(z.looseObject({ id: z.string() }))),
  }),
};

const functionCall = z.looseObject({ function: z.looseObject({ name: z.string(), arguments: z.string() }) });

export function validateChatItem(item: unknown): FieldProblem | undefined {
  if (!isRecord(item)) return { path: '', message: `expected a chat message (an object), got ${kindOf(item)}` };
  const role = choiceProblem(item.role, CHAT_ROLES, 'role');
  if (role) return role;
  const fields = schemaProblem(ROLE_SCHEMAS[item.role as string]!, item);
  if (fields) return fields;
  if (item.role === 'assistant' && Array.isArray(item.tool_calls)) {
    for (let i = 0; i < item.tool_calls.length; i++) {
      const call = item.tool_calls[i] as Record<string, unknown>;
      if (call.type !== 'function') continue;
      const problem = schemaProblem(functionCall, call, `tool_calls[${i}]`);
      if (problem) return problem;
    }
  }
  if (item.role !== 'assistant') return contentProblem(item.content, CHAT_PARTS, false);
  return contentProblem(
    item.content,
    CHAT_PARTS,
    assistantMayOmitContent(item),
    'null or absent only with tool_calls, function_call, refusal or audio',
  );
}

/**
 * The API makes an assistant's `content` optional ("required unless tool_calls or function_call
 * is specified"); we also allow it with a `refusal` or a previous `audio` reply, whose text lives
 * there. Everywhere else content is required (null is not a message).
 */
function assistantMayOmitContent(item: Record<string, unknown>): boolean {
  return (
    (Array.isArray(item.tool_calls) && item.tool_calls.length > 0) ||
    isRecord(item.function_call) ||
    typeof item.refusal === 'string' ||
    isRecord(item.audio)
  );
}
