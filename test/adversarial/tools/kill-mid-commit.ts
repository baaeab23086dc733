// Sends one large rotation (keepLast 800 of 900 items: the commit pre-writes the child's items in
// batches) and SIGKILLs serverless-offline DELAY ms later. Prints the session id; restart
// `npm start`, wait past the lease TTL, run the sweep, then check.ts for orphans / leftover attempts.
// Usage: KEY=... DELAY=350 OFFLINE_PID=... npx tsx test/adversarial/tools/kill-mid-commit.ts
import { Api } from './http.js';

const api = new Api(process.env.BASE ?? 'http://127.0.0.1:3100', process.env.KEY!);
const r = await api.create({});
const id = r.json.session.sessionId as string;
await api.append(id, [{ role: 'user', content: 'HUMAN start' }]);
for (let i = 0; i < 900; i += 98) {
  await api.append(
    id,
    Array.from({ length: Math.min(98, 900 - i) }, (_, k) => ({ role: 'assistant', content: `M:big:${i + k}` })),
  );
}
const pending = api.compress(id, { mode: process.env.MODE ?? 'rotate', keepLast: 800 });
await new Promise((res) => setTimeout(res, Number(process.env.DELAY ?? 350)));
process.kill(Number(process.env.OFFLINE_PID), 'SIGKILL');
const c = await pending;
console.log(JSON.stringify({ sessionId: id, compress: c.status, error: c.error ?? null }));
