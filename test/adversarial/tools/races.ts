/* eslint-disable @typescript-eslint/restrict-template-expressions -- ad-hoc attack tooling */
// Targeted races over HTTP: identical idempotent creates, same key different bodies, replay after
// rotation, tip-chasing down a long chain, deleting the middle / the tip of a chain.
// Usage: BASE=... KEY=... npx tsx test/adversarial/tools/races.ts
import { randomUUID } from 'node:crypto';
import { Api } from './http.js';

const api = new Api(process.env.BASE ?? 'http://127.0.0.1:3100', process.env.KEY!);
const problems: string[] = [];
const note = (ok: boolean, what: string) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) problems.push(what);
};
const human = { role: 'user', content: 'HUMAN start' };
const filler = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ role: 'assistant', content: `M:${tag}:${i}:${randomUUID().slice(0, 6)}` }));

// (a) 12 identical creates with one key
{
  const k = `c-${randomUUID()}`;
  const rs = await Promise.all(Array.from({ length: 12 }, () => api.create({ source: 'race' }, { 'idempotency-key': k })));
  const ids = new Set(rs.map((r) => r.json?.session?.sessionId));
  note(
    rs.every((r) => r.status === 201) && ids.size === 1,
    `12 racing idempotent creates: statuses ${[...new Set(rs.map((r) => r.status))]} sessions ${ids.size}`,
  );
}
// (d) same key, different bodies, racing
{
  const id = (await api.create({})).json.session.sessionId;
  const k = `d-${randomUUID()}`;
  const rs = await Promise.all(
    Array.from({ length: 8 }, (_, i) => api.append(id, [{ role: 'user', content: `body ${i}` }], {}, { 'idempotency-key': k })),
  );
  const oks = rs.filter((r) => r.status === 200 && r.headers['idempotent-replayed'] !== 'true').length;
  const count = (await api.get(id)).json.session.messageCount;
  note(
    oks === 1 && count === 1 && rs.every((r) => r.status === 200 || r.status === 422),
    `same key 8 bodies racing: fresh 200s ${oks}, count ${count}, statuses ${rs.map((r) => r.status).join(',')}`,
  );
}
// (b) replay after rotation
{
  const id = (await api.create({})).json.session.sessionId;
  await api.append(id, [human, ...filler(12, 'b')]);
  const k = `b-${randomUUID()}`;
  const body = [{ role: 'assistant', content: `M:b:keyed:${randomUUID()}` }];
  const first = await api.append(id, body, {}, { 'idempotency-key': k });
  const c = await api.compress(id, { mode: 'rotate', keepLast: 2 });
  const again = await api.append(id, body, {}, { 'idempotency-key': k });
  note(
    first.status === 200 && c.json?.outcome === 'compressed' && again.status === 200 && again.headers['idempotent-replayed'] === 'true',
    `replay after rotation: ${first.status} / ${c.json?.outcome} / replay ${again.status} ${again.json?.error?.code ?? ''} replayed=${again.headers['idempotent-replayed']}`,
  );
  // and with expectedCount in the body: replay still wins over a count that has moved on
  const k2 = `b2-${randomUUID()}`;
  const child = c.json.sessionId;
  const cnt = (await api.get(child)).json.session.messageCount;
  const f2 = await api.append(child, [{ role: 'assistant', content: 'M:b:ec' }], { expectedCount: cnt }, { 'idempotency-key': k2 });
  const a2 = await api.append(child, [{ role: 'assistant', content: 'M:b:ec' }], { expectedCount: cnt }, { 'idempotency-key': k2 });
  note(
    f2.status === 200 && a2.status === 200 && a2.headers['idempotent-replayed'] === 'true',
    `replay with a stale expectedCount: ${f2.status} then ${a2.status} ${a2.json?.error?.code ?? ''}`,
  );
}
// (e) long chain: 25 rotations; append to every ancestor names the live tip
{
  const root = (await api.create({})).json.session.sessionId;
  await api.append(root, [human, ...filler(8, 'e')]);
  const chain = [root];
  for (let i = 0; i < 25; i++) {
    const tip = chain.at(-1)!;
    await api.append(tip, filler(4, `e${i}`));
    const c = await api.compress(tip, { mode: 'rotate', keepLast: 2 });
    if (c.json?.outcome !== 'compressed') {
      note(false, `chain rotation ${i}: ${c.status} ${c.json?.outcome} ${c.json?.reason ?? ''}`);
      break;
    }
    chain.push(c.json.sessionId);
  }
  const tip = chain.at(-1)!;
  const answers = await Promise.all(chain.slice(0, -1).map((s) => api.append(s, filler(1, 'late'))));
  const wrong = answers.filter((r) => r.status !== 409 || r.json?.liveSessionId !== tip);
  note(
    wrong.length === 0,
    `append to each of ${chain.length - 1} ancestors names the tip: ${wrong.length} wrong ${wrong
      .slice(0, 2)
      .map((r) => `${r.status} ${r.json?.liveSessionId}`)
      .join(' ')}`,
  );
  const compressOld = await Promise.all(chain.slice(0, 5).map((s) => api.compress(s, { mode: 'rotate' })));
  note(
    compressOld.every((r) => r.json?.outcome === 'skipped' && r.json?.reason === 'adopted' && r.json?.sessionId === tip),
    `compress an ancestor adopts the tip: ${compressOld.map((r) => `${r.json?.outcome}/${r.json?.reason}/${r.json?.sessionId === tip}`).join(' ')}`,
  );
  const lin = await api.lineage(chain[3]);
  note(
    lin.json?.tip === tip && lin.json?.chain?.length === chain.length,
    `lineage from the middle: tip ok=${lin.json?.tip === tip} length ${lin.json?.chain?.length}/${chain.length}`,
  );
  // (f) delete a middle session: ancestors still name the tip; the middle answers 404
  const mid = chain[10]!;
  const d = await api.del(mid);
  const anc = await api.append(chain[2], filler(1, 'late2'));
  const midAppend = await api.append(mid, filler(1, 'late3'));
  note(
    d.status === 204 && anc.status === 409 && anc.json?.liveSessionId === tip && midAppend.status === 404,
    `delete middle: ${d.status}; ancestor 409 names tip: ${anc.json?.liveSessionId === tip}; middle ${midAppend.status}`,
  );
  const lin2 = await api.lineage(chain[2]);
  note(
    lin2.status === 200 && lin2.json?.tip === tip,
    `lineage across a deleted middle: ${lin2.status} tip ok=${lin2.json?.tip === tip} length ${lin2.json?.chain?.length}`,
  );
  // delete the tip: ancestors now get...?
  const dt = await api.del(tip);
  const anc2 = await api.append(chain[2], filler(1, 'late4'));
  const lin3 = await api.lineage(chain[2]);
  console.log(
    `     after deleting the tip (${dt.status}): ancestor append ${anc2.status} ${anc2.json?.error?.code} liveSessionId=${anc2.json?.liveSessionId}; lineage ${lin3.status} tip=${lin3.json?.tip} (tip deleted: ${lin3.json?.tip === tip})`,
  );
}
// (g) identical append twins racing a rotation commit, 20 rounds
{
  let disagreements = 0;
  let dupes = 0;
  for (let round = 0; round < 20; round++) {
    const id = (await api.create({})).json.session.sessionId;
    await api.append(id, [human, ...filler(10, 'g')]);
    const k = `g-${randomUUID()}`;
    const body = [{ role: 'assistant', content: `M:g:twin:${round}` }];
    const [a, b, c] = await Promise.all([
      api.append(id, body, {}, { 'idempotency-key': k }),
      api.compress(id, { mode: pick(['rotate', 'in_place']), keepLast: 2 }),
      api.append(id, body, {}, { 'idempotency-key': k }),
    ]);
    if ((a.status === 200) !== (c.status === 200)) {
      disagreements++;
      console.log(
        `     twin disagreement: ${a.status} ${a.json?.error?.code ?? ''} / ${c.status} ${c.json?.error?.code ?? ''} (compress ${b.json?.outcome})`,
      );
    }
    // count copies of the twin in the live tip
    const tipId = b.json?.outcome === 'compressed' ? b.json.sessionId : id;
    const items = (await api.page(tipId, 'limit=1000')).json?.messages ?? [];
    const copies = items.filter((m: { content?: string }) => m.content === body[0]!.content).length;
    if (copies > 1) dupes++;
  }
  note(disagreements === 0 && dupes === 0, `20 twin-vs-compaction rounds: ${disagreements} disagreements, ${dupes} duplicated`);
}
function pick<T>(xs: T[]): T {
  return xs[Math.floor(Math.random() * xs.length)]!;
}
console.log(`\n${problems.length} problems`);
for (const p of problems) console.log(`FAIL ${p}`);
