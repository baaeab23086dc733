import { Api } from './http.js';
const api = new Api('http://127.0.0.1:3100', process.env.KEY!);
const n = Number(process.env.N ?? 900);
const r = await api.create({});
const id = r.json.session.sessionId;
await api.append(id, [{ role: 'user', content: 'HUMAN start' }]);
for (let i = 0; i < n; i += 98) {
  const batch = Array.from({ length: Math.min(98, n - i) }, (_, k) => ({ role: 'assistant', content: `M:big:${i + k}:` }));
  const a = await api.append(id, batch);
  if (a.status !== 200) console.error('append', a.status, a.text.slice(0, 200));
}
console.log(id);
if (process.env.TIME === '1') {
  const t = Date.now();
  const c = await api.compress(id, { mode: 'rotate', keepLast: Number(process.env.KEEP ?? 800) });
  console.log('compress', c.status, c.json?.outcome, Date.now() - t, 'ms');
}
