// Reads the tool calls a message makes, whatever the client's wire shape.
import type { Message } from '../messages.js';

export interface ToolCallRef {
  id?: string;
  name: string;
  arguments: string;
}

/** Tool calls an assistant message makes: OpenAI `tool_calls` and the legacy `function_call`. */
export function toolCallsOf(message: Message): ToolCallRef[] {
  const calls: ToolCallRef[] = [];
  if (Array.isArray(message.tool_calls)) {
    for (const raw of message.tool_calls as unknown[]) {
      if (!isRecord(raw)) continue;
      const fn = isRecord(raw.function) ? raw.function : raw;
      if (typeof fn.name !== 'string') continue;
      calls.push({
        id: typeof raw.id === 'string' ? raw.id : undefined,
        name: fn.name,
        arguments: typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? ''),
      });
    }
  }
  if (isRecord(message.function_call) && typeof message.function_call.name === 'string') {
    const args = message.function_call.arguments;
    calls.push({ name: message.function_call.name, arguments: typeof args === 'string' ? args : '' });
  }
  return calls;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
