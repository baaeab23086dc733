// Validation of one `responses` item: the Responses API input items and the Agents SDK's
// AgentInputItem (@openai/agents-core protocol). Checked: what pairing and token counting
// read (call ids, names, arguments, outputs, text parts) and the type of every defined field
// that is present. Fields the SDK marks required but nothing here reads (`status`, `id`) are
// not required, so items of either spelling pass; unknown item types pass as they are.
import * as z from 'zod/mini';
import { isRecord } from './json.js';
import { MESSAGE_ROLES } from './responses.js';
import {
  anyObject,
  choiceProblem,
  contentProblem,
  kindOf,
  nullableString,
  optionalString,
  partProblem,
  partsProblem,
  schemaProblem,
  syntheticFlag,
  type FieldProblem,
  type Schema,
} from './validate-shared.js';

const stringOrObject = z.optional(z.union([z.string(), anyObject]));

/** Message content parts of the API (`input_*`, `output_text`, `refusal`) and the SDK (`audio`, `image`). */
const MESSAGE_PARTS: Record<string, Schema> = {
  input_text: z.looseObject({ text: z.string() }),
  output_text: z.looseObject({ text: z.string(), annotations: z.optional(z.array(anyObject)) }),
  refusal: z.looseObject({ refusal: z.string() }),
  input_image: z.looseObject({ image_url: nullableString, file_id: nullableString, detail: optionalString, image: stringOrObject }),
  input_file: z.looseObject({
    file_data: nullableString,
    file_id: nullableString,
    file_url: nullableString,
    filename: nullableString,
    file: stringOrObject,
  }),
  input_audio: z.looseObject({ input_audio: z.looseObject({ data: z.string(), format: z.string() }) }),
  audio: z.looseObject({ audio: z.union([z.string(), anyObject]), format: nullableString, transcript: nullableString }),
  image: z.looseObject({ image: stringOrObject }),
};

/** Tool output parts: the message parts plus the SDK's legacy `text` / `file` outputs. */
const OUTPUT_PARTS: Record<string, Schema> = {
  ...MESSAGE_PARTS,
  text: z.looseObject({ text: z.string() }),
  file: z.looseObject({ file: z.union([z.string(), anyObject]) }),
};

const textParts = z.optional(z.array(z.looseObject({ type: z.string(), text: z.string() })));

interface ItemRule {
  schema: Schema;
  /** The item names a call by `callId` (SDK) or `call_id` (API); the spelling given is the one errors name. */
  callId?: 'callId' | 'call_id';
  /** `output` must be a string, one output part or an array of them. */
  output?: 'required' | 'optional';
}

const loose = (shape: Record<string, Schema> = {}): Schema => z.looseObject({ ...shape, ...syntheticFlag });
const callIdShape = { callId: nullableString, call_id: nullableString };

const RULES: Record<string, ItemRule> = {
  function_call: { schema: loose({ ...callIdShape, name: z.string(), arguments: z.string() }), callId: 'call_id' },
  function_call_result: {
    schema: loose({ ...callIdShape, name: optionalString, status: optionalString }),
    callId: 'callId',
    output: 'required',
  },
  function_call_output: { schema: loose({ ...callIdShape, status: nullableString }), callId: 'call_id', output: 'required' },
  custom_tool_call: { schema: loose({ ...callIdShape, name: z.string(), input: z.string() }), callId: 'call_id' },
  custom_tool_call_output: { schema: loose(callIdShape), callId: 'call_id', output: 'required' },
  computer_call: { schema: loose(callIdShape), callId: 'call_id' },
  computer_call_result: { schema: loose({ ...callIdShape, output: anyObject }), callId: 'callId' },
  computer_call_output: { schema: loose({ ...callIdShape, output: anyObject }), callId: 'call_id' },
  shell_call: { schema: loose({ ...callIdShape, action: anyObject }), callId: 'call_id' },
  shell_call_output: { schema: loose({ ...callIdShape, output: z.array(anyObject) }), callId: 'call_id' },
  local_shell_call: { schema: loose({ ...callIdShape, action: z.optional(anyObject) }), callId: 'call_id' },
  local_shell_call_output: { schema: loose({ id: optionalString, ...callIdShape, output: z.string() }) },
  apply_patch_call: { schema: loose({ ...callIdShape, operation: anyObject }), callId: 'call_id' },
  apply_patch_call_output: { schema: loose({ ...callIdShape, output: nullableString }), callId: 'call_id' },
  program: { schema: loose({ ...callIdShape, code: z.string() }), callId: 'call_id' },
  program_output: { schema: loose({ ...callIdShape, output: optionalString, result: optionalString }), callId: 'call_id' },
  tool_search_call: { schema: loose(callIdShape) },
  tool_search_output: { schema: loose({ ...callIdShape, tools: z.optional(z.array(anyObject)) }) },
  mcp_call: { schema: loose({ name: z.string(), arguments: z.string(), output: nullableString }) },
  mcp_approval_request: { schema: loose({ id: z.string(), name: z.string(), arguments: z.string() }) },
  mcp_approval_response: { schema: loose({ approval_request_id: z.string(), approve: z.boolean() }) },
  hosted_tool_call: { schema: loose({ name: z.string(), arguments: optionalString }), output: 'optional' },
  reasoning: { schema: loose({ summary: textParts, content: textParts, rawContent: textParts }) },
};

export function validateResponsesItem(item: unknown): FieldProblem | undefined {
  if (!isRecord(item))
    return {
      path: '',
      message: `expected an item (an object with a string "type", or a message with role and content), got ${kindOf(item)}`,
    };
  if (item.type === 'message' || (item.type === undefined && item.role !== undefined)) return messageProblem(item);
  if (item.type === undefined)
    return { path: 'type', message: 'missing; expected a string (the item type), or a message with role and content' };
  if (typeof item.type !== 'string') return { path: 'type', message: `expected a string, got ${kindOf(item.type)}` };
  const rule = Object.hasOwn(RULES, item.type) ? RULES[item.type] : undefined;
  if (!rule) return schemaProblem(loose(), item); // unknown types are kept as they are (our flag is still checked)
  return schemaProblem(rule.schema, item) ?? callIdProblem(item, rule) ?? outputProblem(item, rule);
}

function messageProblem(item: Record<string, unknown>): FieldProblem | undefined {
  return (
    choiceProblem(item.role, MESSAGE_ROLES, 'role') ?? schemaProblem(loose(), item) ?? contentProblem(item.content, MESSAGE_PARTS, false)
  );
}

function callIdProblem(item: Record<string, unknown>, rule: ItemRule): FieldProblem | undefined {
  if (!rule.callId || typeof item.callId === 'string' || typeof item.call_id === 'string') return undefined;
  return { path: rule.callId, message: 'missing; expected a string (call_id in the Responses API, callId in the Agents SDK)' };
}

function outputProblem(item: Record<string, unknown>, rule: ItemRule): FieldProblem | undefined {
  if (!rule.output) return undefined;
  const output = item.output;
  if (typeof output === 'string') return undefined;
  if (Array.isArray(output)) return partsProblem(output, OUTPUT_PARTS, 'output');
  if (isRecord(output)) return partProblem(output, OUTPUT_PARTS, 'output');
  if (output === undefined && rule.output === 'optional') return undefined;
  const expected = 'expected a string, an output part or an array of output parts';
  return { path: 'output', message: output === undefined ? `missing; ${expected}` : `${expected}, got ${kindOf(output)}` };
}
