// L6 under a paused holder: instance A starts a large rotation and is SIGSTOPped mid-attempt;
// after its lease expired, instance B compacts the same session; then A is resumed. The session
// must end with exactly one child, and A must not answer "compressed" to a second child.
// Usage: KEY=... A=http://127.0.0.1:3100 B=http://127.0.0.1:3110 A_PID=... PAUSE_MS=35000 DELAY=200
import { Api } from './http.js';

const a = new Api(process.env.A!, process.env.KEY!);
const b = new Api(process.env.B!, process.env.KEY!);
const id = (await a.create({})).json.session.sessionId as string;
await a.append(id, [{ role: 'user', content: 'HUMAN start' }]);
for (let i = 0; i < 900; i += 98)
  await a.append(
    id,
    Array.from({ length: Math.min(98, 900 - i) }, (_, k) => ({ role: 'assistant', content: `M:pause:${i + k}` })),
  );
const pid = Number(process.env.A_PID);
const slow = a.compress(id, { mode: process.env.MODE ?? 'rotate', keepLast: 800 });
await new Promise((r) => setTimeout(r, Number(process.env.DELAY ?? 200)));
process.kill(pid, 'SIGSTOP');
console.log(new Date().toISOString(), 'A stopped');
await new Promise((r) => setTimeout(r, Number(process.env.PAUSE_MS ?? 35_000)));
const appended = await b.append(id, [{ role: 'assistant', content: 'M:pause:during' }]);
const other = await b.compress(id, { mode: 'rotate', keepLast: 2 });
console.log('B append', appended.status, 'B compress', other.status, other.json?.outcome, other.json?.reason ?? '', other.json?.sessionId);
process.kill(pid, 'SIGCONT');
console.log(new Date().toISOString(), 'A resumed');
const late = await slow;
console.log(
  'A compress',
  late.status,
  late.json?.outcome,
  late.json?.reason ?? '',
  late.json?.sessionId,
  late.error ?? '',
  late.text.slice(0, 200),
);
await new Promise((r) => setTimeout(r, 3000));
const lin = await b.lineage(id);
console.log(
  'lineage',
  lin.json?.chain?.map((s: { sessionId: string }) => s.sessionId),
  'tip',
  lin.json?.tip,
);
console.log(JSON.stringify({ parent: id }));
