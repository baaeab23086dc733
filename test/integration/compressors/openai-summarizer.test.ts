// The summarizer against a real local HTTP server (node:http on port 0) playing the
// OpenAI-compatible endpoint: success, every failure mode falling back (C12), and abort.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SUMMARY_PREFIX, type Message } from '../../../lib/messages.js';
import { extractiveCompress } from '../../../lib/compressors/extractive.js';
import { OpenAiSummarizer } from '../../../lib/compressors/openai-summarizer.js';
import type { CompressionEngine, CompressOptions } from '../../../lib/compressors/types.js';
import { agentSession } from '../../unit/compressors/transcripts.js';

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

const json = (status: number, body: unknown): Reply => (res) => {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
};
const completion = (content: string | null) => json(200, { id: 'cmpl-1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] });
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
const options: CompressOptions = { keepLast: 3 };
const extractiveResult = extractiveCompress(input, options).messages;

describe('OpenAiSummarizer', () => {
  it('C6: posts the middle to /chat/completions and builds system + first human + summary + last K', async () => {
    reply = completion('Key facts:\n- export broke because of the bucket policy\nOpen tasks:\n- tell finance');
    const result = await summarizer().compress(input, { ...options, focus: 'billing exports' });

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
    const out = result.messages;
    expect(out.slice(0, 2)).toEqual(input.slice(0, 2));
    expect(out[2]).toEqual({
      role: 'assistant',
      content: `${SUMMARY_PREFIX} Key facts:\n- export broke because of the bucket policy\nOpen tasks:\n- tell finance`,
    });
    expect(out.slice(3)).toEqual(input.slice(-3));
  });

  it('sends no Authorization header when no API key is configured, and keeps a prefix the model already wrote', async () => {
    reply = completion(`${SUMMARY_PREFIX} already prefixed`);
    const result = await summarizer({ apiKey: undefined }).compress(input, options);
    expect(seen[0]?.headers.authorization).toBeUndefined();
    expect(result.messages[2]?.content).toBe(`${SUMMARY_PREFIX} already prefixed`);
  });

  it('C7: nothing to compact → input unchanged and no request sent', async () => {
    reply = completion('unused');
    const short = input.slice(0, 3);
    const result = await summarizer().compress(short, options);
    expect(result.messages).toEqual(short);
    expect(seen).toHaveLength(0);
  });

  const failures: { name: string; reply: Reply; warning: RegExp }[] = [
    { name: 'HTTP 500', reply: json(500, { error: { message: 'model overloaded' } }), warning: /HTTP 500: .*model overloaded/ },
    { name: 'invalid JSON', reply: (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"choices": [ oops'), warning: /not valid JSON/ },
    { name: 'empty choices', reply: json(200, { choices: [] }), warning: /no choices/ },
    { name: 'empty content', reply: completion('   '), warning: /empty completion/ },
    { name: 'null content', reply: completion(null), warning: /empty completion/ },
    { name: 'wrong shape', reply: json(200, { result: 'hi' }), warning: /unexpected response/ },
  ];
  for (const f of failures) {
    it(`C12: ${f.name} falls back to extractive with a warning`, async () => {
      reply = f.reply;
      const result = await summarizer().compress(input, options);
      expect(seen).toHaveLength(1);
      expect(result.aborted).toBeUndefined();
      expect(result.messages).toEqual(extractiveResult);
      expect(result.warnings?.[0]).toMatch(/^summarizer failed \(/);
      expect(result.warnings?.[0]).toMatch(f.warning);
      expect(result.warnings?.[0]).toMatch(/; fell back to extractive$/);
    });
  }

  it('C12: a server that never answers is cut off by the deadline (200 ms) and falls back', async () => {
    reply = neverAnswer;
    const result = await summarizer().compress(input, { ...options, deadline: Date.now() + 200 });
    expect(result.messages).toEqual(extractiveResult);
    expect(result.warnings?.[0]).toMatch(/^summarizer failed \(timed out after \d+ ms\); fell back to extractive$/);
  });

  it('C12: the configured timeout applies without a deadline', async () => {
    reply = neverAnswer;
    const result = await summarizer({ timeoutMs: 150 }).compress(input, options);
    expect(result.warnings?.[0]).toBe('summarizer failed (timed out after 150 ms); fell back to extractive');
  });

  it('C12: a deadline already passed falls back without calling the model', async () => {
    reply = completion('unused');
    const now = 1_000_000;
    const result = await summarizer({ now: () => now }).compress(input, { ...options, deadline: now - 1 });
    expect(seen).toHaveLength(0);
    expect(result.messages).toEqual(extractiveResult);
    expect(result.warnings?.[0]).toBe('summarizer failed (deadline already passed); fell back to extractive');
  });

  it('C12: an unreachable endpoint falls back with the connection error in the warning', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const result = await summarizer({ baseUrl: `http://127.0.0.1:${port}/v1` }).compress(input, options);
    expect(result.messages).toEqual(extractiveResult);
    expect(result.warnings?.[0]).toMatch(/^summarizer failed \(fetch failed.*\); fell back to extractive$/);
  });

  it('C6/C12: a configured fallback engine gets only the options it declares', async () => {
    reply = json(503, {});
    const received: CompressOptions[] = [];
    const fallback: CompressionEngine = {
      name: 'recording',
      acceptedOptions: ['keepLast'],
      async compress(messages, opts) {
        received.push(opts);
        return { messages: messages.slice(-2), warnings: ['recording engine ran'] };
      },
    };
    const controller = new AbortController();
    const result = await summarizer({ fallback }).compress(input, { keepLast: 3, targetTokens: 500, signal: controller.signal, focus: 'x' });
    expect(received).toEqual([{ keepLast: 3 }]);
    expect(result.messages).toEqual(input.slice(-2));
    expect(result.warnings).toEqual(['summarizer failed (HTTP 503: {}); fell back to recording', 'recording engine ran']);
  });

  it('C12: aborting the signal mid-request returns the input untouched with aborted: true and a warning', async () => {
    reply = neverAnswer;
    const controller = new AbortController();
    const arrived = new Promise<void>((resolve) => (requestArrived = resolve));
    const pending = summarizer().compress(input, { ...options, signal: controller.signal });
    await Promise.race([arrived, pending]);
    expect(seen).toHaveLength(1);
    controller.abort(new Error('lease lost'));
    const result = await pending;
    expect(result.aborted).toBe(true);
    expect(result.messages).toEqual(input);
    expect(result.warnings).toEqual(['summarizer aborted (lease lost); nothing compacted']);
  });

  it('C12: an already-aborted signal returns at once without calling the model', async () => {
    reply = completion('unused');
    const result = await summarizer().compress(input, { ...options, signal: AbortSignal.abort(new Error('cancelled')) });
    expect(seen).toHaveLength(0);
    expect(result).toEqual({ aborted: true, messages: input, warnings: ['summarizer aborted (cancelled); nothing compacted'] });
  });

  it('bounds the transcript it sends: older messages beyond the limit go as an extractive digest', async () => {
    reply = completion('summary');
    const big: Message[] = [
      ...input.slice(0, 2),
      ...Array.from({ length: 30 }, (_, i): Message => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} ${'lorem ipsum '.repeat(300)}` })),
      ...input.slice(2),
    ];
    await summarizer({ maxTranscriptChars: 20_000 }).compress(big, options);
    const sent = seen[0]?.body.messages?.[1]?.content ?? '';
    expect(sent.length).toBeLessThan(25_000);
    expect(sent).toMatch(/Digest of the \d+ oldest messages/);
    expect(sent).toContain(input[input.length - 4]?.content); // the newest middle message is verbatim
  });
});
