import { Api } from './http.js';
const api = new Api('http://127.0.0.1:3100', process.env.KEY!);
const r = await api.create({});
const id = r.json.session.sessionId;
for (let i = 0; i < 10; i++) {
  const a = await api.append(id, [
    { role: 'user', content: `${i}:` + 'y'.repeat(330_000) },
    { role: 'user', content: `${i}b:` + 'y'.repeat(330_000) },
  ]);
  if (a.status !== 200) console.log('append', a.status, a.text.slice(0, 200));
}
const s = await api.get(id);
console.log('count', s.json.session.messageCount);
const t = await api.page(id, 'tail=20');
console.log(
  'tail=20 ->',
  t.status,
  t.json?.messages?.length,
  'nextCursor',
  t.json?.nextCursor,
  'bytes',
  t.text.length,
  'first',
  t.json?.messages?.[0]?.content?.slice(0, 4),
);
const p = await api.page(id, 'limit=20');
console.log('limit=20 ->', p.status, p.json?.messages?.length, 'nextCursor', !!p.json?.nextCursor);
