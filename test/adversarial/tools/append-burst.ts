// A4: "without expectedCount, appends never fail for concurrency". N concurrent single-item
// appends to one session (optionally across instances, optionally while it is compacted).
// Usage: BASES=... KEY=... N=64 COMPACT=1 npx tsx test/adversarial/tools/append-burst.ts
import { Api } from './http.js';

const apis = (process.env.BASES ?? 'http://127.0.0.1:3100').split(',').map((b) => new Api(b, process.env.KEY!));
const n = Number(process.env.N ?? 64);
const id = (await apis[0]!.create({})).json.session.sessionId as string;
await apis[0]!.append(id, [
  { role: 'user', content: 'HUMAN' },
  ...Array.from({ length: 10 }, (_, i) => ({ role: 'assistant', content: `M:seed:${i}` })),
]);
const t = Date.now();
const jobs: Promise<{ status: number; code?: string; ms: number; live?: string }>[] = Array.from({ length: n }, (_, i) =>
  apis[i % apis.length]!.append(id, [{ role: 'assistant', content: `M:burst:${i}` }]).then((r) => ({
    status: r.status,
    code: r.json?.error?.code,
    ms: r.ms,
    live: r.json?.liveSessionId,
  })),
);
if (process.env.COMPACT === '1') {
  for (let k = 0; k < 3; k++)
    jobs.push(
      apis[k % apis.length]!.compress(id, { mode: 'in_place', keepLast: 3 }).then((r) => ({
        status: r.status,
        code: `compress:${r.json?.outcome}`,
        ms: r.ms,
      })),
    );
}
const rs = await Promise.all(jobs);
const by: Record<string, number> = {};
for (const r of rs) by[`${r.status} ${r.code ?? ''}`] = (by[`${r.status} ${r.code ?? ''}`] ?? 0) + 1;
console.log(by, 'max ms', Math.max(...rs.map((r) => r.ms)), 'wall', Date.now() - t);
const s = await apis[0]!.get(id);
console.log('messageCount', s.json.session.messageCount);
