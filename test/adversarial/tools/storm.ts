/* eslint-disable @typescript-eslint/restrict-template-expressions -- ad-hoc attack tooling */
// A bounded storm against a running service: per session, concurrent compress calls (mixed
// rotate / in_place, origins turn / manual / review), appenders chasing the live tip (some with
// Idempotency-Keys, some racing an identical twin, some with expectedCount), a popper, a pager,
// a tip-chaser appending to the root, and (optionally) a deleter. Writes a JSON log of every
// acknowledged append and pop so tools/check.ts can verify the table afterwards.
//
// Usage: BASE=... KEY=... TENANT=... SECONDS=60 SESSIONS=3 OUT=/tmp/storm.json npx tsx test/adversarial/tools/storm.ts
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Api, badServerError, type Reply } from './http.js';
import type { Acked } from './invariants.js';

const base = process.env.BASE ?? 'http://127.0.0.1:3100';
const key = process.env.KEY ?? '';
const seconds = Number(process.env.SECONDS ?? 60);
const sessions = Number(process.env.SESSIONS ?? 3);
const compressors = Number(process.env.COMPRESSORS ?? 4);
const appenders = Number(process.env.APPENDERS ?? 3);
const withDelete = process.env.DELETE !== '0';
/** Seed items per session and the keepLast choices (large keepLast: commits too big for one transaction). */
const seedItems = Number(process.env.SEED ?? 10);
const keepChoices = (process.env.KEEP ?? '2,3,4').split(',').map(Number);
const out = process.env.OUT ?? '/tmp/storm.json';
/** BASES=url1,url2: every request goes to one of several service instances ("containers") at random. */
const apis = (process.env.BASES ?? base).split(',').map((b) => new Api(b.trim(), key));
const api: Api = new Proxy(apis[0]!, {
  get: (_t, prop) => {
    const target = apis[Math.floor(Math.random() * apis.length)]!;
    const v = (target as unknown as Record<PropertyKey, unknown>)[prop];
    return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
  },
});

const acked: Acked[] = [];
const popped: string[] = [];
const deleted: string[] = [];
const bad5xx: string[] = [];
const transport: string[] = [];
const statusCounts: Record<string, number> = {};
const anomalies: string[] = [];
const failedAppends: { markers: string[]; status: number; code?: string; idem: boolean; ms: number }[] = [];
const rotatedClaims: { parent: string; child: string }[] = [];
const deadline = Date.now() + seconds * 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;

function count(op: string, r: Reply): void {
  const k = `${op} ${r.status}${r.json?.error?.code ? ` ${r.json.error.code}` : ''}${r.json?.outcome ? ` ${r.json.outcome}${r.json.reason ? `/${r.json.reason}` : ''}` : ''}`;
  statusCounts[k] = (statusCounts[k] ?? 0) + 1;
  const b = badServerError(r);
  if (b) bad5xx.push(`${op}: ${b}`);
  if (r.error) transport.push(`${op}: ${r.error}`);
}

class Chain {
  tip: string;
  known = new Set<string>();
  order: string[] = [];
  constructor(readonly root: string) {
    this.tip = root;
    this.known.add(root);
    this.order.push(root);
  }
  moveTo(id: string | null | undefined): void {
    if (!id) return;
    if (!this.known.has(id)) {
      this.known.add(id);
      this.order.push(id);
    }
    this.tip = id;
  }
}

let seq = 0;
const item = (who: string) => ({ role: 'assistant', content: `M:${who}:${++seq}:${randomUUID().slice(0, 8)}` });

async function seed(): Promise<Chain> {
  const r = await api.create({ format: 'chat', source: 'storm' });
  count('create', r);
  const id = r.json.session.sessionId as string;
  const c = new Chain(id);
  const first = [
    { role: 'system', content: 'You are a storm.' },
    { role: 'user', content: 'HUMAN: please work' },
    ...Array.from({ length: Math.min(seedItems, 96) }, () => item('seed')),
  ];
  const a = await api.append(id, first);
  count('append', a);
  if (a.status === 200)
    for (const m of first) if (m.content.startsWith('M:')) acked.push({ marker: m.content, sessionId: id, at: Date.now() });
  for (let left = seedItems - 96; left > 0; left -= 98) {
    const more = Array.from({ length: Math.min(left, 98) }, () => item('seed'));
    const b = await api.append(id, more);
    count('append', b);
    if (b.status === 200) for (const m of more) acked.push({ marker: m.content, sessionId: id, at: Date.now() });
  }
  return c;
}

async function appender(c: Chain, w: string): Promise<void> {
  let lastCount: number | undefined;
  while (Date.now() < deadline) {
    const items = Array.from({ length: 1 + Math.floor(Math.random() * 3) }, () => item(w));
    const roll = Math.random();
    const headers: Record<string, string> = roll < 0.5 ? { 'idempotency-key': randomUUID() } : {};
    const extra = roll > 0.8 && lastCount !== undefined ? { expectedCount: lastCount } : {};
    const target = c.tip;
    const twin = roll < 0.2; // an identical idempotent request racing this one
    const sends = twin
      ? [api.append(target, items, extra, headers), api.append(target, items, extra, headers)]
      : [api.append(target, items, extra, headers)];
    const replies = await Promise.all(sends);
    let ok = false;
    for (const r of replies) {
      count(twin ? 'append-twin' : 'append', r);
      if (r.status !== 200)
        failedAppends.push({
          markers: items.map((m) => m.content),
          status: r.status,
          code: r.json?.error?.code,
          idem: !!headers['idempotency-key'],
          ms: r.ms,
        });
      if (r.status === 200) {
        ok = true;
        lastCount = r.json?.session?.messageCount;
      } else if (r.status === 409 && r.json?.error?.code === 'session_ended') {
        if (!r.json.liveSessionId) anomalies.push(`409 session_ended without liveSessionId on ${target}: ${r.text.slice(0, 200)}`);
        c.moveTo(r.json.liveSessionId);
        lastCount = undefined;
      } else if (r.status === 409 && r.json?.error?.code === 'count_mismatch') {
        lastCount = r.json.messageCount;
      } else if (r.status === 404) {
        return; // deleted
      }
    }
    if (twin && replies.every((r) => r.status === 200)) {
      const replayedCount = replies.filter((r) => r.headers['idempotent-replayed'] === 'true').length;
      if (replayedCount !== 1) anomalies.push(`twin idempotent appends: ${replayedCount} replayed (expected exactly 1) on ${target}`);
      if (JSON.stringify(replies[0]!.json) !== JSON.stringify(replies[1]!.json))
        anomalies.push(`twin idempotent appends answered differently on ${target}`);
    }
    if (twin && replies.some((r) => r.status === 200) && replies.some((r) => r.status !== 200 && r.status !== 0)) {
      anomalies.push(
        `twin idempotent appends disagree: ${replies.map((r) => `${r.status} ${r.json?.error?.code ?? ''}`).join(' / ')} on ${target}`,
      );
    }
    if (replies.some((r) => r.status === 0)) await sleep(250);
    if (ok) for (const m of items) acked.push({ marker: m.content, sessionId: target, at: Date.now() });
    await sleep(Math.random() * 40);
  }
}

async function compressor(c: Chain): Promise<void> {
  while (Date.now() < deadline) {
    const target = c.tip;
    const body: Record<string, unknown> = {
      mode: pick(['rotate', 'rotate', 'in_place']),
      origin: pick(['turn', 'manual', 'manual', 'review']),
    };
    if (Math.random() < 0.5) body.keepLast = pick(keepChoices);
    const r = await api.compress(target, body);
    count(`compress-${body.mode}-${body.origin}`, r);
    if (r.status === 200) {
      const o = r.json;
      if (body.origin === 'review' && o.outcome !== 'disabled') anomalies.push(`review origin got ${o.outcome} on ${target}`);
      if (o.outcome === 'compressed' && o.mode === 'rotate') {
        rotatedClaims.push({ parent: o.previousSessionId, child: o.sessionId });
        if (o.previousSessionId !== target) anomalies.push(`rotated claim names parent ${o.previousSessionId} but we asked ${target}`);
      }
      c.moveTo(o.sessionId);
    } else if (r.status === 409) c.moveTo(r.json?.liveSessionId);
    await sleep(r.status === 0 ? 500 : 50 + Math.random() * 200);
  }
}

async function popper(c: Chain): Promise<void> {
  while (Date.now() < deadline) {
    await sleep(200 + Math.random() * 300);
    const r = await api.pop(c.tip);
    count('pop', r);
    if (r.status === 200 && r.json?.removed) {
      const mk = r.json.removed.content;
      if (typeof mk === 'string') popped.push(mk);
    } else if (r.status === 409) c.moveTo(r.json?.liveSessionId);
    else if (r.status === 404) return;
  }
}

async function pager(c: Chain): Promise<void> {
  while (Date.now() < deadline) {
    const target = c.tip;
    const seen = new Set<string>();
    let cursor: string | null | undefined;
    let pages = 0;
    for (;;) {
      const r = await api.page(target, `limit=${pick([3, 7, 50])}${cursor ? `&cursor=${cursor}` : ''}`);
      count('page', r);
      if (r.status !== 200) break;
      for (const m of r.json.messages as { content?: string }[]) {
        if (typeof m.content === 'string' && m.content.startsWith('M:')) {
          if (seen.has(m.content)) anomalies.push(`paging ${target}: ${m.content} returned twice in one pass`);
          seen.add(m.content);
        }
      }
      cursor = r.json.nextCursor;
      if (!cursor || ++pages > 200) break;
    }
    const t = await api.page(target, `tail=${pick([1, 5, 20])}`);
    count('tail', t);
    await sleep(100);
  }
}

/** Appends to the root (long ended): the 409 must name a live tip at or after the newest tip we knew. */
async function tipChaser(c: Chain): Promise<void> {
  while (Date.now() < deadline) {
    await sleep(300);
    if (c.root === c.tip) continue;
    const knownBefore = c.order.indexOf(c.tip);
    const r = await api.append(c.root, [item('chaser')]);
    count('append-root', r);
    if (r.status === 200) {
      anomalies.push(`append to ended root ${c.root} succeeded`);
      continue;
    }
    if (r.status === 409) {
      const live = r.json?.liveSessionId as string | null;
      if (!live) {
        anomalies.push(`409 from root without liveSessionId: ${r.text.slice(0, 200)}`);
        continue;
      }
      const lin = await api.lineage(live);
      count('lineage', lin);
      if (lin.status === 200) {
        const chain = (lin.json.chain as { sessionId: string }[]).map((s) => s.sessionId);
        if (chain[0] !== c.root) anomalies.push(`liveSessionId ${live} is not in the root's chain (${chain[0]})`);
        const knownTip = c.order[knownBefore]!;
        if (chain.indexOf(live) < chain.indexOf(knownTip))
          anomalies.push(`root 409 named ${live}, older than the tip ${knownTip} we already knew`);
      }
      c.moveTo(live);
    }
  }
}

async function deleter(c: Chain): Promise<void> {
  await sleep((seconds * 1000) / 2);
  const target = c.tip;
  const r = await api.del(target);
  count('delete', r);
  if (r.status === 204) {
    deleted.push(target);
    for (const op of [
      () => api.get(target),
      () => api.page(target),
      () => api.append(target, [item('after-delete')]),
      () => api.compress(target, { mode: 'rotate' }),
      () => api.pop(target),
    ]) {
      const x = await op();
      count('after-delete', x);
      if (x.status !== 404) anomalies.push(`after delete of ${target}: ${x.status} ${x.text.slice(0, 150)}`);
    }
  }
}

async function main() {
  const chains = await Promise.all(Array.from({ length: sessions }, () => seed()));
  const work: Promise<void>[] = [];
  chains.forEach((c, i) => {
    for (let k = 0; k < compressors; k++) work.push(compressor(c));
    for (let k = 0; k < appenders; k++) work.push(appender(c, `s${i}a${k}`));
    work.push(popper(c), pager(c), tipChaser(c));
    if (withDelete && i === 0) work.push(deleter(c));
  });
  await Promise.all(work);
  // I2: every "rotated to X" claim for one parent names the same child.
  const byParent = new Map<string, Set<string>>();
  for (const cl of rotatedClaims) byParent.set(cl.parent, (byParent.get(cl.parent) ?? new Set()).add(cl.child));
  for (const [p, cs] of byParent) if (cs.size > 1) anomalies.push(`I2: parent ${p} claimed rotated to ${[...cs].join(',')}`);
  const dupClaims = rotatedClaims.length - byParent.size;
  if (dupClaims > 0) anomalies.push(`I2: ${dupClaims} extra "compressed/rotate" answers for already-claimed parents`);
  const result = {
    failedAppends,
    roots: chains.map((c) => c.root),
    tips: chains.map((c) => c.tip),
    acked,
    popped,
    deleted,
    bad5xx,
    transport,
    statusCounts,
    anomalies,
    rotatedClaims,
  };
  writeFileSync(out, JSON.stringify(result, null, 1));
  console.log(
    JSON.stringify(
      {
        acked: acked.length,
        popped: popped.length,
        deleted,
        rotations: rotatedClaims.length,
        bad5xx: bad5xx.length,
        transport: transport.length,
        anomalies,
      },
      null,
      1,
    ),
  );
  console.log(statusCounts);
}

await main();
