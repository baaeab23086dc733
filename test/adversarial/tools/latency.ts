import { Api } from './http.js';
const api = new Api('http://127.0.0.1:3100', process.env.KEY!);
const r = await api.create({});
const id = r.json.session.sessionId;
await api.append(id, [
  { role: 'user', content: 'HUMAN' },
  ...Array.from({ length: 20 }, (_, i) => ({ role: 'assistant', content: `M:l:${i}` })),
]);
for (let i = 0; i < 4; i++) {
  const [a, b] = await Promise.all([
    api.compress(id, { mode: 'in_place', keepLast: 2 }),
    api.compress(id, { mode: 'in_place', keepLast: 2 }),
  ]);
  console.log('compress pair', a.status, a.json?.outcome, a.ms, 'ms /', b.status, b.json?.outcome, b.json?.reason, b.ms, 'ms');
  await api.append(
    id,
    Array.from({ length: 6 }, (_, k) => ({ role: 'assistant', content: `M:l:${i}:${k}` })),
  );
}
