import { loadTokenCounter } from '../../../lib/items/tokens.js';
const c = await loadTokenCounter();
for (const n of [500, 1000, 2000, 4000]) {
  const s = '\u{1F600}\u200d\u{1F525}'.repeat(n);
  const t = Date.now();
  const k = c.countText(s);
  console.log(n, s.length, 'chars', k, 'tokens', Date.now() - t, 'ms');
}
