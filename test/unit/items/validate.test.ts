import { describe, expect, it } from 'vitest';
import { describeProblem, validateItems } from '../../../lib/items/validate.js';
import type { ItemFormat } from '../../../lib/items/types.js';
import {
  allFixtures,
  bigToolArguments,
  chatWithBigArguments,
  longChatTranscript,
  longResponsesTranscript,
  responsesWithBigArguments,
} from '../../fixtures/transcripts/index.js';

/** The API's rendering of the first problem, or 'ok'. */
function verdict(format: ItemFormat, items: unknown[]): string {
  const r = validateItems(format, items);
  return r.ok ? 'ok' : describeProblem(r.problem);
}

describe('A1: item validation', () => {
  it.each(allFixtures.map((f) => [f.name, f] as const))('A1: %s validates and comes back deep-equal (as parsed JSON)', (_name, fixture) => {
    const wire = JSON.parse(JSON.stringify(fixture.items)) as unknown[];
    const r = validateItems(fixture.format, wire);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.items).toEqual(fixture.items);
    expect(JSON.stringify(r.items)).toBe(JSON.stringify(fixture.items)); // same keys, same order
    r.items.forEach((item, i) => expect(item).toBe(wire[i])); // the client's own objects
  });

  it('A1: long generated transcripts of both formats validate (every 99-item page)', () => {
    for (const [format, items] of [
      ['chat', longChatTranscript(40)],
      ['responses', longResponsesTranscript(40)],
    ] as const) {
      for (let i = 0; i < items.length; i += 99) expect(verdict(format, items.slice(i, i + 99))).toBe('ok');
    }
  });

  it('A1: 100 KB tool arguments are fine in both formats', () => {
    expect(bigToolArguments().length).toBeGreaterThanOrEqual(100_000);
    expect(verdict('chat', chatWithBigArguments())).toBe('ok');
    expect(verdict('responses', responsesWithBigArguments())).toBe('ok');
  });

  it('A1: unknown fields, content-part types, tool-call types and (responses) item types are kept', () => {
    const chat = [
      { role: 'user', content: [{ type: 'x-sticker', sticker: { id: 1 } }], x_extra: { a: [1, { b: null }] } },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'custom', custom: { name: 'g', input: 'x' } },
          { id: 'c2', type: 'future_tool', future_tool: {} },
        ],
      },
    ];
    const responses = [
      { type: 'x_future_item', payload: { deep: [1, 2] } },
      { role: 'user', content: [{ type: 'input_video', video_url: 'https://v' }] },
    ];
    for (const [format, items] of [
      ['chat', chat],
      ['responses', responses],
    ] as const) {
      const r = validateItems(format, items);
      expect(r).toEqual({ ok: true, items });
    }
  });

  it('A1: the content-null rule: only an assistant with tool_calls, function_call, refusal or audio may omit content', () => {
    const call = { id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } };
    expect(verdict('chat', [{ role: 'assistant', content: null, tool_calls: [call] }])).toBe('ok');
    expect(verdict('chat', [{ role: 'assistant', tool_calls: [call] }])).toBe('ok');
    expect(verdict('chat', [{ role: 'assistant', content: null, refusal: 'no' }])).toBe('ok');
    expect(verdict('chat', [{ role: 'assistant', content: null, function_call: { name: 'f', arguments: '{}' } }])).toBe('ok');
    expect(verdict('chat', [{ role: 'assistant', content: null, audio: { id: 'audio_1' } }])).toBe('ok');
    expect(verdict('chat', [{ role: 'assistant', content: null, tool_calls: [] }])).toMatch(
      /^messages\[0\]\.content: expected a string or an array of content parts \(null or absent only with/,
    );
    expect(verdict('chat', [{ role: 'user', content: null }])).toBe(
      'messages[0].content: expected a string or an array of content parts, got null',
    );
    expect(verdict('chat', [{ role: 'tool', tool_call_id: 'c' }])).toBe(
      'messages[0].content: missing; expected a string or an array of content parts',
    );
  });

  const chatErrors: [string, unknown[], string][] = [
    [
      'unknown role',
      [{ role: 'bot', content: 'x' }],
      'messages[0].role: unknown role "bot"; expected one of system, developer, user, assistant, tool',
    ],
    ['missing role', [{ content: 'x' }], 'messages[0].role: missing; expected one of system, developer, user, assistant, tool'],
    [
      'role not a string',
      [{ role: 1, content: 'x' }],
      'messages[0].role: expected one of system, developer, user, assistant, tool, got a number',
    ],
    ['not an object', ['hello'], 'messages[0]: expected a chat message (an object), got a string'],
    [
      'tool call without id, at index 3',
      [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'user', content: 'c' },
        { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] },
      ],
      'messages[3].tool_calls[0].id: missing; expected a string',
    ],
    [
      'arguments not a string',
      [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: { a: 1 } } }] }],
      'messages[0].tool_calls[0].function.arguments: expected a string, got an object',
    ],
    [
      'second call without name',
      [
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'a', type: 'function', function: { name: 'f', arguments: '' } },
            { id: 'b', type: 'function', function: { arguments: '' } },
          ],
        },
      ],
      'messages[0].tool_calls[1].function.name: missing; expected a string',
    ],
    ['tool without tool_call_id', [{ role: 'tool', content: 'x' }], 'messages[0].tool_call_id: missing; expected a string'],
    [
      'content a number',
      [{ role: 'user', content: 5 }],
      'messages[0].content: expected a string or an array of content parts, got a number',
    ],
    [
      'part not an object',
      [{ role: 'user', content: ['x'] }],
      'messages[0].content[0]: expected a content part (an object with a string "type"), got a string',
    ],
    ['part without type', [{ role: 'user', content: [{ text: 'x' }] }], 'messages[0].content[0].type: missing; expected a string'],
    [
      'text part without text',
      [{ role: 'user', content: [{ type: 'text', text: 'ok' }, { type: 'text' }] }],
      'messages[0].content[1].text: missing; expected a string',
    ],
    [
      'image_url url',
      [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 3 } }] }],
      'messages[0].content[0].image_url.url: expected a string, got a number',
    ],
    [
      'input_audio format',
      [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x' } }] }],
      'messages[0].content[0].input_audio.format: missing; expected a string',
    ],
    ['name not a string', [{ role: 'user', content: 'x', name: 7 }], 'messages[0].name: expected a string, got a number'],
    [
      'synthetic not a boolean',
      [{ role: 'user', content: 'x', synthetic: 'yes' }],
      'messages[0].synthetic: expected a boolean, got a string',
    ],
    ['refusal not a string', [{ role: 'assistant', content: 'x', refusal: 1 }], 'messages[0].refusal: expected a string, got a number'],
  ];
  it.each(chatErrors)('A1: chat: %s names the index and the field', (_name, items, message) => {
    expect(verdict('chat', items)).toBe(message);
  });

  const responsesErrors: [string, unknown[], string][] = [
    [
      'function_call without any call id',
      [{ type: 'function_call', name: 'f', arguments: '{}' }],
      'messages[0].call_id: missing; expected a string (call_id in the Responses API, callId in the Agents SDK)',
    ],
    [
      'SDK result without callId',
      [{ type: 'function_call_result', name: 'f', status: 'completed', output: 'x' }],
      'messages[0].callId: missing; expected a string (call_id in the Responses API, callId in the Agents SDK)',
    ],
    [
      'callId a number',
      [{ type: 'function_call', callId: 3, name: 'f', arguments: '{}' }],
      'messages[0].callId: expected a string, got a number',
    ],
    [
      'arguments an object',
      [{ type: 'function_call', call_id: 'c', name: 'f', arguments: {} }],
      'messages[0].arguments: expected a string, got an object',
    ],
    [
      'output missing',
      [{ type: 'function_call_output', call_id: 'c' }],
      'messages[0].output: missing; expected a string, an output part or an array of output parts',
    ],
    [
      'output a number',
      [{ type: 'function_call_output', call_id: 'c', output: 5 }],
      'messages[0].output: expected a string, an output part or an array of output parts, got a number',
    ],
    [
      'output part text',
      [{ type: 'function_call_result', callId: 'c', output: [{ type: 'input_text', text: 4 }] }],
      'messages[0].output[0].text: expected a string, got a number',
    ],
    [
      'message role',
      [{ role: 'tool', content: 'x' }],
      'messages[0].role: unknown role "tool"; expected one of user, assistant, system, developer',
    ],
    [
      'message without content',
      [{ type: 'message', role: 'user' }],
      'messages[0].content: missing; expected a string or an array of content parts',
    ],
    [
      'output_text without text',
      [{ type: 'message', role: 'assistant', content: [{ type: 'output_text' }] }],
      'messages[0].content[0].text: missing; expected a string',
    ],
    ['no type, no role', [{ foo: 1 }], 'messages[0].type: missing; expected a string (the item type), or a message with role and content'],
    ['type a number', [{ type: 7 }], 'messages[0].type: expected a string, got a number'],
    [
      'reasoning summary text',
      [{ type: 'reasoning', summary: [{ type: 'summary_text' }] }],
      'messages[0].summary[0].text: missing; expected a string',
    ],
    [
      'approve not a boolean',
      [{ type: 'mcp_approval_response', approval_request_id: 'r', approve: 'yes' }],
      'messages[0].approve: expected a boolean, got a string',
    ],
    ['unknown type with a bad flag', [{ type: 'x_new', synthetic: 1 }], 'messages[0].synthetic: expected a boolean, got a number'],
    [
      'not an object',
      [null],
      'messages[0]: expected an item (an object with a string "type", or a message with role and content), got null',
    ],
  ];
  it.each(responsesErrors)('A1: responses: %s names the index and the field', (_name, items, message) => {
    expect(verdict('responses', items)).toBe(message);
  });

  it('A1: the first bad item is reported, by its index', () => {
    const items = [{ role: 'user', content: 'ok' }, { role: 'user', content: 'ok' }, { role: 'user' }, { role: 'bot' }];
    const r = validateItems('chat', items);
    expect(r).toEqual({
      ok: false,
      problem: { index: 2, path: 'content', message: 'missing; expected a string or an array of content parts' },
    });
  });

  it('describeProblem renders the item itself, a field, and a non-array body', () => {
    expect(describeProblem({ index: 4, path: '', message: 'm' })).toBe('messages[4]: m');
    expect(describeProblem({ index: 0, path: 'tool_calls[0].id', message: 'm' })).toBe('messages[0].tool_calls[0].id: m');
    expect(verdict('chat', 'nope' as unknown as unknown[])).toBe('messages: expected an array of items');
  });

  it('A1: a 1 MB request (99 items) validates in a few milliseconds', () => {
    const items = Array.from({ length: 33 }, () => chatWithBigArguments(30_000)).flat();
    expect(items).toHaveLength(99);
    expect(JSON.stringify(items).length).toBeGreaterThan(1_000_000);
    validateItems('chat', items); // warm up
    const t0 = performance.now();
    for (let i = 0; i < 10; i++) expect(validateItems('chat', items).ok).toBe(true);
    // Generous on a shared 2-core machine: the point is "not proportional to the bytes" (strings are not scanned).
    expect((performance.now() - t0) / 10).toBeLessThan(50);
  });
});
