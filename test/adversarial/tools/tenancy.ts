// F2: another tenant's session id answers 404 on every route, also while its owner compacts it.
import { Api } from './http.js';

const base = process.env.BASE ?? 'http://127.0.0.1:3100';
const a = new Api(base, process.env.KEY_A!);
const b = new Api(base, process.env.KEY_B!);
const id = (await a.create({})).json.session.sessionId as string;
await a.append(id, [
  { role: 'user', content: 'secret' },
  ...Array.from({ length: 30 }, (_, i) => ({ role: 'assistant', content: `M:t:${i}` })),
]);
const owner = a.compress(id, { mode: 'rotate', keepLast: 2 });
const probes = await Promise.all([
  b.get(id),
  b.page(id),
  b.page(id, 'tail=5'),
  b.lineage(id),
  b.append(id, [{ role: 'user', content: 'x' }]),
  b.compress(id, { mode: 'rotate' }),
  b.compress(id, { mode: 'in_place', origin: 'review' }),
  b.pop(id),
  b.del(id),
]);
console.log('other tenant:', probes.map((r) => `${r.status}${r.json?.error?.code ? ` ${r.json.error.code}` : ''}`).join(', '));
const o = await owner;
console.log('owner compress:', o.status, o.json?.outcome);
const child = o.json?.sessionId as string;
const p2 = await Promise.all([b.get(child), b.append(child, [{ role: 'user', content: 'x' }]), b.lineage(child)]);
console.log('other tenant on child:', p2.map((r) => r.status).join(', '));
const still = await a.get(id);
console.log('owner still sees parent:', still.status, 'messages', (await a.page(id)).json?.messages?.length);
