// Compaction cost on hostile content: tool arguments / outputs of ~370 KB without spaces
// (base64), deep unicode, and many small items. Prints the compress latency and outcome.
import { randomBytes } from 'node:crypto';
import { Api } from './http.js';

const api = new Api(process.env.BASE ?? 'http://127.0.0.1:3100', process.env.KEY!);
async function run(name: string, items: unknown[], format: 'chat' | 'responses' = 'chat') {
  const id = (await api.create({ format })).json.session.sessionId as string;
  for (const it of items) {
    const r = await api.append(id, [it]);
    if (r.status !== 200) {
      console.log(name, 'append', r.status, r.text.slice(0, 150));
      return;
    }
  }
  const tip = (await api.lineage(id)).json.tip as string;
  const t = Date.now();
  const c = await api.compress(tip, { mode: 'rotate', keepLast: 2 });
  console.log(
    name,
    'compress',
    c.status,
    c.json?.outcome,
    c.json?.reason ?? '',
    `${Date.now() - t} ms`,
    c.status >= 500 ? c.text.slice(0, 200) : '',
  );
}
const b64 = () => randomBytes(270_000).toString('base64'); // 360 KB, no spaces
await run('base64 tool args', [
  { role: 'user', content: 'HUMAN' },
  ...Array.from({ length: 4 }, (_, i) => [
    { role: 'assistant', content: null, tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'upload', arguments: b64() } }] },
    { role: 'tool', tool_call_id: `c${i}`, content: b64() },
  ]).flat(),
  { role: 'assistant', content: 'done' },
]);
await run('emoji walls', [
  { role: 'user', content: 'HUMAN' },
  ...Array.from({ length: 6 }, () => ({ role: 'assistant', content: '\u{1F600}\u200d\u{1F525}'.repeat(25_000) })),
]);
await run(
  'responses reasoning + outputs',
  [
    { type: 'message', role: 'user', content: 'HUMAN' },
    ...Array.from({ length: 4 }, (_, i) => [
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'x'.repeat(100_000) }], encrypted_content: b64() },
      { type: 'function_call', callId: `k${i}`, name: 'f', arguments: b64() },
      { type: 'function_call_result', callId: `k${i}`, output: [{ type: 'text', text: b64() }] },
    ]).flat(),
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'done' }] },
  ],
  'responses',
);
