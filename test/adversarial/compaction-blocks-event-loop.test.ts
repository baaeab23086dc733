// Defect (medium, liveness): compacting a transcript with large tool payloads (base64 file
// contents / screenshots in tool arguments and results, ~360 KB each, 8 of them: 2.9 MB) runs
// exact o200k counting synchronously for many seconds at a time. While it runs, nothing else
// in the invocation can: not the lease refresher (L5, every ttl/2 = 15 s), not the heartbeat
// (C5), not the pre-commit time check (C9).
//
// Measured on the 2-core dev box: countText of one 360 KB base64 string 1.4-1.9 s, the
// extractive engine alone 8.1 s in one block, countItems of the input 15.8 s. A 512 MB Lambda
// gets roughly a third of a vCPU, so one engine call blocks for well over the 15 s refresh
// interval and the 29 s HTTP / 30 s lease budget: the lease expires under a live holder (the
// fence keeps the transcript safe, but the compaction can never finish and each after-turn
// event burns an invocation and leaves an attempt for the sweep). Under serverless-offline the
// block froze every other request: an unrelated append hit the 29 s timeout and got an
// unshaped 500 `{"message":"Internal Server Error"}`.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ExtractiveCompressor } from '../../lib/compressors/extractive.js';
import type { Item } from '../../lib/items/types.js';

/** The longest time the event loop could not run a timer while `work` ran. */
async function longestBlockMs(work: () => Promise<unknown>): Promise<number> {
  let last = Date.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = Date.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 20);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  worst = Math.max(worst, Date.now() - last);
  return worst;
}

describe('adversarial: compaction of large tool payloads and the event loop (L5, C5, C9)', () => {
  it('L5/C9: the engine never blocks the event loop for more than 2 s on a 2.9 MB base64-heavy transcript', { timeout: 180_000 }, async () => {
    const b64 = () => randomBytes(270_000).toString('base64');
    const items: Item[] = [
      { role: 'user', content: 'Please archive these files.' },
      ...Array.from({ length: 4 }, (_, i): Item[] => [
        { role: 'assistant', content: null, tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'upload', arguments: b64() } }] },
        { role: 'tool', tool_call_id: `c${i}`, content: b64() },
      ]).flat(),
      { role: 'assistant', content: 'All four files are archived.' },
    ];
    const engine = new ExtractiveCompressor();
    await engine.compress({ format: 'chat', items: items.slice(0, 2) }); // load the tokenizer first
    const blocked = await longestBlockMs(() => engine.compress({ format: 'chat', items }, { keepLast: 2 }));
    expect(blocked).toBeLessThan(2_000);
  });
});
