/* eslint-disable @typescript-eslint/no-explicit-any -- ad-hoc attack tooling over raw JSON items */
// A storm of tool calls: responses-format (function_call / function_call_result by callId) and
// chat-format (assistant tool_calls / tool messages) sessions, calls and results appended
// together or apart (a result landing while a compaction runs), compacted with small keepLast.
// Afterwards every transcript in the table is checked: no result without its call before it,
// no call whose result exists elsewhere in the chain but not after it in this transcript (A2).
// Usage: BASE=... KEY=... TENANT=... SECONDS=40 npx tsx test/adversarial/tools/storm-tools.ts
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Api, badServerError } from './http.js';
import { dumpTenant } from './invariants.js';

const api = new Api(process.env.BASE ?? 'http://127.0.0.1:3100', process.env.KEY!);
const tenant = process.env.TENANT!;
const deadline = Date.now() + Number(process.env.SECONDS ?? 40) * 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;
const bad: string[] = [];
const counts: Record<string, number> = {};
const tally = (k: string) => (counts[k] = (counts[k] ?? 0) + 1);

type Fmt = 'chat' | 'responses';
function call(fmt: Fmt, id: string) {
  return fmt === 'responses'
    ? { type: 'function_call', callId: id, name: 'lookup', arguments: JSON.stringify({ q: id, pad: 'p'.repeat(50) }), status: 'completed' }
    : {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'lookup', arguments: JSON.stringify({ q: id }) } }],
      };
}
function result(fmt: Fmt, id: string) {
  return fmt === 'responses'
    ? { type: 'function_call_result', callId: id, name: 'lookup', status: 'completed', output: { type: 'text', text: `result ${id}` } }
    : { role: 'tool', tool_call_id: id, content: `result ${id}` };
}

async function worker(fmt: Fmt, tip: { id: string }) {
  while (Date.now() < deadline) {
    const id = `call_${randomUUID().slice(0, 8)}`;
    const together = Math.random() < 0.5;
    const send = async (items: unknown[]) => {
      for (let i = 0; i < 5; i++) {
        const r = await api.append(tip.id, items);
        tally(`append ${r.status}`);
        const b = badServerError(r);
        if (b) bad.push(b);
        if (r.status === 409 && r.json?.liveSessionId) {
          tip.id = r.json.liveSessionId;
          continue;
        }
        return r.status;
      }
      return 0;
    };
    if (together) await send([call(fmt, id), result(fmt, id)]);
    else if ((await send([call(fmt, id)])) === 200) {
      await sleep(Math.random() * 150);
      await send([result(fmt, id)]);
    }
    if (Math.random() < 0.3)
      await send([
        fmt === 'responses'
          ? { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'thinking' }] }
          : { role: 'assistant', content: 'thinking' },
      ]);
  }
}

async function compactor(tip: { id: string }) {
  while (Date.now() < deadline) {
    const r = await api.compress(tip.id, { mode: pick(['rotate', 'in_place']), keepLast: pick([1, 2, 3]) });
    tally(`compress ${r.status} ${r.json?.outcome ?? ''}`);
    const b = badServerError(r);
    if (b) bad.push(b);
    if (r.status === 200 && r.json.sessionId) tip.id = r.json.sessionId;
    if (r.status === 409 && r.json?.liveSessionId) tip.id = r.json.liveSessionId;
    await sleep(80 + Math.random() * 150);
  }
}

const work: Promise<void>[] = [];
for (const fmt of ['responses', 'chat', 'responses'] as Fmt[]) {
  const id = (await api.create({ format: fmt })).json.session.sessionId as string;
  await api.append(id, [
    fmt === 'responses' ? { type: 'message', role: 'user', content: 'HUMAN start' } : { role: 'user', content: 'HUMAN start' },
  ]);
  const tip = { id };
  work.push(worker(fmt, tip), worker(fmt, tip), compactor(tip), compactor(tip));
}
await Promise.all(work);
console.log(counts, `bad5xx ${bad.length}`, bad.slice(0, 3));

// Check pairing in every transcript that is or was live.
const stack = JSON.parse(readFileSync(process.env.STACK_FILE ?? 'infra/local/.local-stack.json', 'utf8'));
const dump = await dumpTenant(stack.dynamodbEndpoint, stack.tableName, tenant);
const gens = new Map<string, { seq: number; item: Record<string, any> }[]>();
for (const m of dump.msgs) {
  const sid = /#S#(.+)$/.exec(m.pk)![1]!;
  const meta = dump.metas.get(sid);
  if (!meta) continue;
  const k = `${sid}#${m.generation}`;
  if (m.generation === (meta.generation ?? 0) && m.seq > (meta.lastSeq ?? 0)) continue;
  gens.set(k, [...(gens.get(k) ?? []), { seq: m.seq, item: JSON.parse(m.body) }]);
}
const problems: string[] = [];
for (const [k, list] of gens) {
  list.sort((a, b) => a.seq - b.seq);
  const calls = new Set<string>();
  const answered = new Set<string>();
  for (const { item } of list) {
    const callIds: string[] =
      item.type === 'function_call'
        ? [item.callId]
        : Array.isArray(item.tool_calls)
          ? item.tool_calls.map((c: { id: string }) => c.id)
          : [];
    for (const c of callIds) calls.add(c);
    const res = item.type === 'function_call_result' ? item.callId : item.role === 'tool' ? item.tool_call_id : undefined;
    if (res !== undefined) {
      if (!calls.has(res)) problems.push(`${k}: result ${res} without its call before it`);
      answered.add(res);
    }
  }
  for (const c of calls) {
    // A call left unanswered in a transcript is fine only if its result never arrived (or arrives later in the tip).
    if (!answered.has(c)) {
      const sid = k.split('#')[0]!;
      const meta = dump.metas.get(sid)!;
      const isLiveGen = !meta.endedAt && !meta.childSessionId && Number(k.split('#')[1]) === (meta.generation ?? 0);
      if (!isLiveGen) {
        const elsewhere = [...gens.entries()].some(
          ([k2, l2]) =>
            k2 !== k && l2.some(({ item }) => (item.callId === c && item.type === 'function_call_result') || item.tool_call_id === c),
        );
        // The result went to the child / next generation while the call stayed here: separated.
        const answeredLater = [...gens.entries()].some(
          ([k2, l2]) =>
            k2 !== k &&
            l2.some(
              ({ item }) =>
                (item.callId === c && item.type === 'function_call') || item.tool_calls?.some?.((t: { id: string }) => t.id === c),
            ),
        );
        if (elsewhere && !answeredLater) problems.push(`${k}: call ${c} answered only in another transcript`);
      }
    }
  }
}
console.log(`${gens.size} transcripts checked, ${problems.length} pairing problems`);
for (const p of problems.slice(0, 20)) console.log(p);
