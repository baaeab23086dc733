// In-process cost of the extractive engine + exact token counts on hostile transcripts.
import { randomBytes } from 'node:crypto';
import { ExtractiveCompressor } from '../../../lib/compressors/extractive.js';
import { loadTokenCounter } from '../../../lib/items/tokens.js';
import { adapterFor } from '../../../lib/items/adapters.js';

const b64 = (n: number) => randomBytes(n).toString('base64');
const size = Number(process.env.BYTES ?? 270_000);
const items = [
  { role: 'user', content: 'HUMAN' },
  ...Array.from({ length: 4 }, (_, i) => [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'upload', arguments: b64(size) } }],
    },
    { role: 'tool', tool_call_id: `c${i}`, content: b64(size) },
  ]).flat(),
  { role: 'assistant', content: 'done' },
];
const counter = await loadTokenCounter();
let t = Date.now();
for (const it of items.slice(1, 3)) {
  const s = JSON.stringify(it);
  const t0 = Date.now();
  counter.countText(s);
  console.log('countText', s.length, 'chars', Date.now() - t0, 'ms');
}
t = Date.now();
console.log('countItems', counter.countItems(items, adapterFor('chat')), Date.now() - t, 'ms');
t = Date.now();
const out = await new ExtractiveCompressor().compress({ format: 'chat', items: items }, { keepLast: 2 });
console.log('compress', out.items.length, 'items', Date.now() - t, 'ms');
