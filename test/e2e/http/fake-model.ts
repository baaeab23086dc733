// An OpenAI-compatible /chat/completions endpoint the test holds: every request waits until the
// test releases it. Pointing the service's summarizer at it (OPENAI_BASE_URL) holds a real
// compaction between its snapshot and its commit, so the test can act in between.
import { createServer, type Server } from 'node:http';

export interface HeldRequest {
  /** The transcript text the summarizer sent (its prompt's user message). */
  transcript: string;
  /** Answers the request with a summary; the compaction then goes on to its commit. */
  release(summary?: string): void;
}

export interface FakeModel {
  baseUrl: string;
  /** Resolves with the next request once it has arrived (the compaction has read its snapshot). */
  next(): Promise<HeldRequest>;
  /** Every transcript seen so far. */
  readonly transcripts: string[];
  /** While false, requests are answered at once (default true: held until released). */
  hold: boolean;
  close(): Promise<void>;
}

export async function startFakeModel(): Promise<FakeModel> {
  const arrived: HeldRequest[] = [];
  const waiting: ((r: HeldRequest) => void)[] = [];
  const transcripts: string[] = [];
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const body = JSON.parse(text) as { messages: { role: string; content: string }[] };
      const transcript = body.messages.find((m) => m.role === 'user')?.content ?? '';
      transcripts.push(transcript);
      const held: HeldRequest = {
        transcript,
        release(summary = 'Key facts:\n- the widgets were configured') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: summary } }] }));
        },
      };
      if (!model.hold) return held.release();
      const w = waiting.shift();
      if (w) w(held);
      else arrived.push(held);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const model: FakeModel = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    transcripts,
    hold: true,
    next: () => {
      const r = arrived.shift();
      return r ? Promise.resolve(r) : new Promise((resolve) => waiting.push(resolve));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return model;
}
