// The summarizer against a real local HTTP server (node:http on port 0) playing the
// OpenAI-compatible endpoint: success, every failure mode falling back (C12), and abort.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { extractiveCompress } from '../../../lib/compressors/extractive.js';
import { OpenAiSummarizer } from '../../../lib/compressors/openai-summarizer.js';
import type { CompressionEngine, CompressOptions, Transcript } from '../../../lib/compressors/types.js';
import { loadTokenCounter } from '../../../lib/items/tokens.js';
import { SUMMARY_PREFIX, type Item } from '../../../lib/items/types.js';
import { agentSession } from '../../unit/compressors/transcripts.js';
import { agentsSdkRun, longResponsesTranscript } from '../../fixtures/transcripts/index.js';

interface SeenRequest {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingMessage['headers'];
  body: { model?: string; messages?: { role: string; content: string }[] };
}

type Reply = (res: ServerResponse) => void;

let server: Server;
let baseUrl: string;
let reply: Reply;
const seen: SeenRequest[] = [];
let requestArrived: () => void = () => {};

const json =
  (status: number, body: unknown): Reply =>
  (res) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
const completion = (content: string | null) =>
  json(200, {
    id: 'cmpl-1',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  });
const neverAnswer: Reply = () => {};

// A fresh server (and port) per test: fetch's connection pool never reuses a socket a previous test closed.
beforeEach(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: JSON.parse(raw) as SeenRequest['body'] });
      requestArrived();
      reply(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
});

afterEach(async () => {
  seen.length = 0;
  requestArrived = () => {};
  server.closeAllConnections(); // the never-answering replies
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function summarizer(overrides: Partial<ConstructorParameters<typeof OpenAiSummarizer>[0]> = {}): OpenAiSummarizer {
  return new OpenAiSummarizer({ baseUrl, apiKey: 'sk-local-test', model: 'test-model', ...overrides });
}

const input = agentSession();
const chat: Transcript = { format: 'chat', items: input };
const options: CompressOptions = { keepLast: 3 };
let extractiveResult: Item[];
beforeAll(async () => {
  extractiveResult = extractiveCompress(chat, options, await loadTokenCounter()).items;
});

describe('OpenAiSummarizer (chat)', () => {
  it('C6: posts the middle to /chat/completions and builds system + first human + summary + last K', async () => {
    reply = completion('Key facts:\n- export broke because of the bucket policy\nOpen tasks:\n- tell finance');
    const result = await summarizer().compress(chat, { ...options, focus: 'billing exports' });

    expect(seen).toHaveLength(1);
    const [req] = seen as [SeenRequest];
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/v1/chat/completions');
    expect(req.headers.authorization).toBe('Bearer sk-local-test');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.body.model).toBe('test-model');
    const [system, user] = req.body.messages ?? [];
    expect(system?.role).toBe('system');
    expect(system?.content).toContain('Focus on: billing exports');
    expect(user?.role).toBe('user');
    expect(user?.content).toContain('We decided to use the new bucket invoices-v2'); // middle text is sent
    expect(user?.content).toContain('read_file(');
    expect(user?.content).not.toContain(input[1]?.content); // the first human turn is kept, not summarized

    expect(result.warnings).toBeUndefined();
    expect(result.aborted).toBeUndefined();
    const out = result.items;
    expect(out.slice(0, 2)).toEqual(input.slice(0, 2));
    expect(out[2]).toEqual({
      role: 'assistant',
      content: `${SUMMARY_PREFIX} Key facts:\n- export broke because of the bucket policy\nOpen tasks:\n- tell finance`,
    });
    expect(out.slice(3)).toEqual(input.slice(-3));
  });

  it('sends no Authorization header when no API key is configured, and keeps a prefix the model already wrote', async () => {
    reply = completion(`${SUMMARY_PREFIX} already prefixed`);
    const result = await summarizer({ apiKey: undefined }).compress(chat, options);
    expect(seen[0]?.headers.authorization).toBeUndefined();
    expect(result.items[2]?.content).toBe(`${SUMMARY_PREFIX} already prefixed`);
  });

  it('C7: nothing to compact → input unchanged and no request sent', async () => {
    reply = completion('unused');
    const short = input.slice(0, 3);
    const result = await summarizer().compress({ format: 'chat', items: short }, options);
    expect(result.items).toEqual(short);
    expect(seen).toHaveLength(0);
  });

  const failures: { name: string; reply: Reply; warning: RegExp }[] = [
    { name: 'HTTP 500', reply: json(500, { error: { message: 'model overloaded' } }), warning: /HTTP 500: .*model overloaded/ },
    {
      name: 'invalid JSON',
      reply: (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"choices": [ oops'),
      warning: /not valid JSON/,
    },
    { name: 'empty choices', reply: json(200, { choices: [] }), warning: /no choices/ },
    { name: 'empty content', reply: completion('   '), warning: /empty completion/ },
    { name: 'null content', reply: completion(null), warning: /empty completion/ },
    { name: 'wrong shape', reply: json(200, { result: 'hi' }), warning: /unexpected response/ },
  ];
  for (const f of failures) {
    it(`C12: ${f.name} falls back to extractive with a warning`, async () => {
      reply = f.reply;
      const result = await summarizer().compress(chat, options);
      expect(seen).toHaveLength(1);
      expect(result.aborted).toBeUndefined();
      expect(result.items).toEqual(extractiveResult);
      expect(result.warnings?.[0]).toMatch(/^summarizer failed \(/);
      expect(result.warnings?.[0]).toMatch(f.warning);
      expect(result.warnings?.[0]).toMatch(/; fell back to extractive$/);
    });
  }

  it('C12: a server that never answers is cut off by the deadline (200 ms) and falls back', async () => {
    reply = neverAnswer;
    const result = await summarizer().compress(chat, { ...options, deadline: Date.now() + 200 });
    expect(result.items).toEqual(extractiveResult);
    expect(result.warnings?.[0]).toMatch(/^summarizer failed \(timed out after \d+ ms\); fell back to extractive$/);
  });

  it('C12: the configured timeout applies without a deadline', async () => {
    reply = neverAnswer;
    const result = await summarizer({ timeoutMs: 150 }).compress(chat, options);
    expect(result.warnings?.[0]).toBe('summarizer failed (timed out after 150 ms); fell back to extractive');
  });

  it('C12: a deadline already passed falls back without calling the model', async () => {
    reply = completion('unused');
    const now = 1_000_000;
    const result = await summarizer({ now: () => now }).compress(chat, { ...options, deadline: now - 1 });
    expect(seen).toHaveLength(0);
    expect(result.items).toEqual(extractiveResult);
    expect(result.warnings?.[0]).toBe('summarizer failed (deadline already passed); fell back to extractive');
  });

  it('C12: an unreachable endpoint falls back with the connection error in the warning', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const result = await summarizer({ baseUrl: `http://127.0.0.1:${port}/v1` }).compress(chat, options);
    expect(result.items).toEqual(extractiveResult);
    expect(result.warnings?.[0]).toMatch(/^summarizer failed \(fetch failed.*\); fell back to extractive$/);
  });

  it('C6/C12: a configured fallback engine gets only the options it declares', async () => {
    reply = json(503, {});
    const received: CompressOptions[] = [];
    const fallback: CompressionEngine = {
      name: 'recording',
      acceptedOptions: ['keepLast'],
      compress(transcript, opts) {
        received.push(opts);
        return Promise.resolve({ items: transcript.items.slice(-2), warnings: ['recording engine ran'] });
      },
    };
    const controller = new AbortController();
    const result = await summarizer({ fallback }).compress(chat, { keepLast: 3, targetTokens: 500, signal: controller.signal, focus: 'x' });
    expect(received).toEqual([{ keepLast: 3 }]);
    expect(result.items).toEqual(input.slice(-2));
    expect(result.warnings).toEqual(['summarizer failed (HTTP 503: {}); fell back to recording', 'recording engine ran']);
  });

  it('C12: aborting the signal mid-request returns the input untouched with aborted: true and a warning', async () => {
    reply = neverAnswer;
    const controller = new AbortController();
    const arrived = new Promise<void>((resolve) => (requestArrived = resolve));
    const pending = summarizer().compress(chat, { ...options, signal: controller.signal });
    await Promise.race([arrived, pending]);
    expect(seen).toHaveLength(1);
    controller.abort(new Error('lease lost'));
    const result = await pending;
    expect(result.aborted).toBe(true);
    expect(result.items).toEqual(input);
    expect(result.warnings).toEqual(['summarizer aborted (lease lost); nothing compacted']);
  });

  it('C12: an already-aborted signal returns at once without calling the model', async () => {
    reply = completion('unused');
    const result = await summarizer().compress(chat, { ...options, signal: AbortSignal.abort(new Error('cancelled')) });
    expect(seen).toHaveLength(0);
    expect(result).toEqual({ aborted: true, items: input, warnings: ['summarizer aborted (cancelled); nothing compacted'] });
  });

  it('bounds the transcript it sends: older messages beyond the limit go as an extractive digest', async () => {
    reply = completion('summary');
    const big: Item[] = [
      ...input.slice(0, 2),
      ...Array.from({ length: 30 }, (_, i): Item => ({
        role: i % 2 ? 'assistant' : 'user',
        content: `turn ${i} ${'lorem ipsum '.repeat(300)}`,
      })),
      ...input.slice(2),
    ];
    await summarizer({ maxTranscriptChars: 20_000 }).compress({ format: 'chat', items: big }, options);
    const sent = seen[0]?.body.messages?.[1]?.content ?? '';
    expect(sent.length).toBeLessThan(25_000);
    expect(sent).toMatch(/Digest of the \d+ oldest items/);
    expect(sent).toContain(input[input.length - 4]?.content as string); // the newest middle message is verbatim
  });
});

describe('OpenAiSummarizer (both formats, SPEC A2)', () => {
  it('A2: chat: the model reads tool calls with their arguments and tool results, rendered as text', async () => {
    reply = completion('Key facts:\n- backfill done');
    await summarizer().compress(chat, options);
    const sent = seen[0]?.body.messages?.[1]?.content ?? '';
    expect(sent).toContain('[assistant] calls read_file({"path":"jobs/export.ts"}) [c1]');
    expect(sent).toContain('edit_file({"path":"config/export.json"}) [c2], run_tests({}) [c3]');
    expect(sent).toContain('[tool result for c3]\n42 passed');
  });

  it('A2: responses: the model reads function_call / function_call_result / hosted calls, and the summary is a responses item', async () => {
    reply = completion('Key facts:\n- table booked (SA-2231)');
    const result = await summarizer().compress({ format: 'responses', items: agentsSdkRun }, { keepLast: 1 });
    const sent = seen[0]?.body.messages?.[1]?.content ?? '';
    expect(sent).toContain('[assistant] calls get_weather({"city":"Tokyo","when":"tonight"}) [call_W8wCqN]');
    expect(sent).toContain('[tool result for call_W8wCqN (get_weather)]\nTokyo tonight: clear, 18°C, 0% rain.');
    expect(sent).toContain('calls book_table(');
    expect(sent).toContain('[assistant] calls web_search_call({"query":"鮨 さいとう dress code"})\nSmart casual');
    expect(sent).not.toContain('What is the weather in Tokyo tonight?'); // the first human turn is kept, not summarized
    expect(result.warnings).toBeUndefined();
    expect(result.items.slice(0, 2)).toEqual(agentsSdkRun.slice(0, 2));
    expect(result.items[2]).toEqual({
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: `${SUMMARY_PREFIX} Key facts:\n- table booked (SA-2231)` }],
    });
    expect(result.items.slice(3)).toEqual(agentsSdkRun.slice(-1));
  });

  it('C12 A2: responses: a failing model falls back to the extractive summary, in the responses format', async () => {
    reply = json(500, { error: { message: 'down' } });
    const items = longResponsesTranscript(12);
    const result = await summarizer().compress({ format: 'responses', items }, { keepLast: 4 });
    expect(result.warnings?.[0]).toMatch(/^summarizer failed \(HTTP 500/);
    expect(result.items).toEqual(extractiveCompress({ format: 'responses', items }, { keepLast: 4 }, await loadTokenCounter()).items);
    expect(result.items[2]?.type).toBe('message');
  });
});
