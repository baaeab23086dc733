// The storm's accounting, from a full scan of its table (SPEC I1, I4, S1, S2).
//
// A chain (root → children) is a sequence of transcripts T0, T1, ..., Tn: each session's committed
// generations in order (in-place compactions), then its child's. Tn is the live transcript.
// Each step Ti → Ti+1 is one committed compaction, whose result is [first human turn, a new
// summary, the kept last K items of its snapshot, the concurrent tail] followed by what was
// appended afterwards (the extractive engine's layout; the storm sends no instructions). With K >= 1 the items right after the new summary start inside Ti, and
// from there on they must be Ti's suffix, verbatim and in order: what the compaction read after
// that point and what was appended while it ran. Items of Ti before that point were in its
// snapshot and were summarized.
//
// So an acknowledged item is accounted for when it appears in the chain, and either is in Tn
// exactly once or was summarized at a step and never appears after it. Lost: acknowledged but
// nowhere, or a step that dropped part of Ti's suffix. Duplicate: twice in one transcript, or
// back after it was summarized.
import { headOfPart, isHeadSk, itemsOfRow, type RawRow } from '../../../lib/lineage/dynamo/rows.js';
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { SUMMARY_PREFIX, type Item } from '../../../lib/items/types.js';

export interface ScannedItem {
  pk: string;
  sk: string;
  [k: string]: unknown;
}

export async function scanTable(ddb: DynamoDBClient, tableName: string): Promise<ScannedItem[]> {
  const out: ScannedItem[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await ddb.send(new ScanCommand({ TableName: tableName, ConsistentRead: true, ExclusiveStartKey: start }));
    for (const raw of page.Items ?? []) out.push(unmarshall(raw) as ScannedItem);
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

interface Meta {
  sessionId: string;
  parentSessionId?: string;
  childSessionId?: string;
  generation: number;
  lastSeq: number;
  attempt?: unknown;
  seal?: unknown;
}

export interface LedgerInput {
  items: ScannedItem[];
  tenantId: string;
  roots: string[];
  /** Acknowledged appends: marker and the session that acknowledged it. */
  acks: { marker: string; sessionId: string }[];
  /** The marker an item carries (undefined for summaries and items the storm did not write). */
  markerOf: (item: Item) => string | undefined;
}

export interface Ledger {
  /** Parents with more than one child. */
  forks: string[];
  /** Acknowledged items not accounted for, and steps that dropped part of their input's suffix. */
  losses: string[];
  duplicates: string[];
  /** Compaction steps per root (committed compactions of its chain). */
  stepsPerRoot: Record<string, number>;
  /** Acknowledged items found verbatim in the live transcript / summarized at a step. */
  live: number;
  summarized: number;
  /** What the sweep must leave none of. */
  attemptsLeft: string[];
  orphans: string[];
  tasksLeft: string[];
}

const isSummary = (item: Item) => typeof item.content === 'string' && item.content.startsWith(SUMMARY_PREFIX);

export function buildLedger(input: LedgerInput): Ledger {
  const prefix = `T#${input.tenantId}#S#`;
  const metas = new Map<string, Meta>();
  const gens = new Map<string, Map<number, { seq: number; item: Item; archived: boolean }[]>>();
  const tasksLeft: string[] = [];
  const orphans: string[] = [];
  for (const it of input.items) {
    if (!it.pk.startsWith(prefix)) continue;
    const sessionId = it.pk.slice(prefix.length);
    if (it.sk === 'META') metas.set(sessionId, it as unknown as Meta);
    else if (it.sk.startsWith('TASK#')) tasksLeft.push(`${sessionId} ${it.sk}`);
    else if (it.sk.startsWith('MSG#') && (isHeadSk(it.sk) || typeof it.body === 'string')) {
      // A row of either layout (packed rows, A7: several items a row, a big one with inline parts).
      const head = it as unknown as RawRow;
      const parts = input.items
        .filter((p) => p.pk === it.pk && !isHeadSk(p.sk) && p.sk.startsWith('MSG#') && headOfPart(p.sk) === it.sk)
        .sort((a, b) => a.sk.localeCompare(b.sk, 'en', { numeric: true }))
        .map((p) => (typeof p.data === 'string' ? p.data : ''));
      const g = Number(it.generation ?? it.sk.split('#')[1]);
      const byGen = gens.get(sessionId) ?? new Map<number, { seq: number; item: Item; archived: boolean }[]>();
      const list = byGen.get(g) ?? [];
      for (const stored of itemsOfRow(head, parts)) {
        list.push({ seq: stored.seq, item: JSON.parse(stored.body) as Item, archived: it.expiresAt !== undefined });
      }
      byGen.set(g, list);
      gens.set(sessionId, byGen);
    }
  }

  // Orphans: items under a session id with no record (a pending child), generations that were
  // never active (neither the live one nor archived), items past the live generation's lastSeq.
  const committed = (sessionId: string): number[] => {
    const meta = metas.get(sessionId)!;
    const out: number[] = [];
    for (const [g, list] of gens.get(sessionId) ?? []) {
      if (g === meta.generation) {
        const beyond = list.filter((m) => m.seq > meta.lastSeq);
        if (beyond.length) orphans.push(`${sessionId} gen ${g}: ${beyond.length} items past lastSeq`);
        out.push(g);
      } else if (list.every((m) => m.archived)) out.push(g);
      else orphans.push(`${sessionId} gen ${g}: ${list.length} items never made active`);
    }
    return out.sort((a, b) => a - b);
  };
  for (const id of gens.keys()) if (!metas.has(id)) orphans.push(`${id}: items without a session record`);

  const children = new Map<string, string[]>();
  for (const m of metas.values())
    if (m.parentSessionId) children.set(m.parentSessionId, [...(children.get(m.parentSessionId) ?? []), m.sessionId]);
  const forks = [...children].filter(([, c]) => c.length > 1).map(([p, c]) => `${p} -> ${c.join(', ')}`);
  const attemptsLeft = [...metas.values()].filter((m) => m.attempt !== undefined || m.seal !== undefined).map((m) => m.sessionId);

  const losses: string[] = [];
  const duplicates: string[] = [];
  const stepsPerRoot: Record<string, number> = {};
  /** marker -> what happened to it: where it lives, or that a step summarized it. */
  const fate = new Map<string, { chain: string; sessions: Set<string>; live: boolean; summarizedAt?: number }>();
  let live = 0;
  let summarized = 0;

  for (const root of input.roots) {
    const transcripts: { sessionId: string; items: Item[] }[] = [];
    for (let id: string | undefined = root; id; id = metas.get(id)?.childSessionId) {
      if (!metas.has(id)) break;
      const meta = metas.get(id)!;
      for (const g of committed(id)) {
        const list = [...gens.get(id)!.get(g)!].filter((m) => g !== meta.generation || m.seq <= meta.lastSeq).sort((a, b) => a.seq - b.seq);
        transcripts.push({ sessionId: id, items: list.map((m) => m.item) });
      }
      if (!gens.get(id)?.has(meta.generation)) transcripts.push({ sessionId: id, items: [] });
    }
    stepsPerRoot[root] = Math.max(0, transcripts.length - 1);

    /** Step i-1 -> i: the input's suffix carried verbatim; marks what it summarized. */
    const step = (i: number): void => {
      const before = transcripts[i - 1]!.items;
      const after = transcripts[i]!.items;
      const beforeJson = new Set(before.map((x) => JSON.stringify(x)));
      const s = after.findIndex((x) => isSummary(x) && !beforeJson.has(JSON.stringify(x)));
      const firstKept = s >= 0 ? after[s + 1] : undefined;
      const j = firstKept === undefined ? -1 : before.findIndex((x) => JSON.stringify(x) === JSON.stringify(firstKept));
      if (s < 0 || j < 0) {
        losses.push(
          `step ${i} of ${root} (${transcripts[i - 1]!.sessionId} -> ${transcripts[i]!.sessionId}): no new summary followed by a kept item of its input`,
        );
        return;
      }
      const suffix = before.slice(j);
      const carried = after.slice(s + 1, s + 1 + suffix.length);
      const firstDiff = suffix.findIndex((x, k) => JSON.stringify(x) !== JSON.stringify(carried[k]));
      if (firstDiff >= 0)
        losses.push(
          `step ${i} of ${root}: item ${j + firstDiff} of its input (${input.markerOf(suffix[firstDiff]!)}) not carried verbatim`,
        );
      // What the result keeps ahead of its summary (the first human turn) goes on; the rest before j was summarized.
      const head = new Set(after.slice(0, s).map(input.markerOf));
      for (const x of before.slice(0, j)) {
        const m = input.markerOf(x);
        if (m !== undefined && !head.has(m) && fate.get(m)!.summarizedAt === undefined) fate.get(m)!.summarizedAt = i - 1;
      }
    };
    transcripts.forEach((t, i) => {
      if (i > 0) step(i);
      const seen = new Set<string>();
      for (const m of t.items.map(input.markerOf)) {
        if (m === undefined) continue;
        if (seen.has(m)) duplicates.push(`${m} twice in ${t.sessionId} (transcript ${i})`);
        seen.add(m);
        const f = fate.get(m) ?? { chain: root, sessions: new Set<string>(), live: false };
        if (f.summarizedAt !== undefined && f.summarizedAt < i)
          duplicates.push(`${m} back in transcript ${i} of ${t.sessionId} after it was summarized at step ${f.summarizedAt + 1}`);
        f.sessions.add(t.sessionId);
        fate.set(m, f);
      }
    });
    const tip = transcripts.at(-1);
    for (const m of (tip?.items ?? []).map(input.markerOf)) if (m !== undefined) fate.get(m)!.live = true;
  }

  for (const ack of input.acks) {
    const f = fate.get(ack.marker);
    if (!f) losses.push(`${ack.marker}: acknowledged by ${ack.sessionId}, found nowhere`);
    else if (!f.sessions.has(ack.sessionId))
      losses.push(`${ack.marker}: acknowledged by ${ack.sessionId}, found only in ${[...f.sessions].join(', ')}`);
    else if (f.live) live++;
    else if (f.summarizedAt !== undefined) summarized++;
    else losses.push(`${ack.marker}: neither live nor summarized`);
  }
  return { forks, losses, duplicates, stepsPerRoot, live, summarized, attemptsLeft, orphans, tasksLeft };
}
