// Reads the table (and Redis) directly and checks the project's invariants for one tenant:
// forks (I1), lost / duplicated acknowledged appends (I4, A3), leaked leases (I3), leftover
// attempts and orphan items after a sweep (S1, S2). Not part of the suite.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { Redis } from 'ioredis';

export interface Meta {
  pk: string;
  sk: string;
  sessionId: string;
  parentSessionId?: string;
  childSessionId?: string;
  endedAt?: string;
  deletedAt?: string;
  generation?: number;
  lastSeq?: number;
  messageCount?: number;
  attempt?: { attemptId: string; holder: string };
  leaseExpiresAt?: number;
  seal?: unknown;
  fence?: number;
}
export interface Msg {
  pk: string;
  sk: string;
  generation: number;
  seq: number;
  body: string;
  expiresAt?: number;
}

export interface TableDump {
  metas: Map<string, Meta>;
  msgs: Msg[];
  other: Record<string, unknown>[];
}

export async function dumpTenant(endpoint: string, table: string, tenant: string): Promise<TableDump> {
  const u = new URL(endpoint);
  if (u.hostname !== '127.0.0.1') throw new Error('local DynamoDB only');
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const doc = DynamoDBDocumentClient.from(client);
  const prefix = `T#${tenant}#`;
  const metas = new Map<string, Meta>();
  const msgs: Msg[] = [];
  const other: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(
      new ScanCommand({
        TableName: table,
        FilterExpression: 'begins_with(pk, :p)',
        ExpressionAttributeValues: { ':p': prefix },
        ExclusiveStartKey: start,
      }),
    );
    for (const it of out.Items ?? []) {
      if (it.sk === 'META') metas.set(it.sessionId as string, it as Meta);
      else if (String(it.sk).startsWith('MSG#')) msgs.push(it as Msg);
      else other.push(it);
    }
    start = out.LastEvaluatedKey;
  } while (start);
  client.destroy();
  return { metas, msgs, other };
}

export interface Acked {
  marker: string;
  sessionId: string;
  at: number;
}

export interface Report {
  sessions: number;
  forks: string[];
  lost: string[];
  holes: string[];
  duplicates: string[];
  leftoverAttempts: string[];
  orphanItems: string[];
  notes: string[];
}

/** Marker of a stored item body (our storm puts `M:` markers in content). */
export function markerOf(body: string): string | undefined {
  const m = /"content":"(M:[^"]+)"/.exec(body);
  return m?.[1];
}

const sidOfPk = (pk: string) => /#S#(.+)$/.exec(pk)?.[1] ?? pk;

/**
 * acked: every 2xx-acknowledged append (its marker and the session it was acked on);
 * popped: markers a pop returned; deleted: sessions we deleted (their lineage is exempt from loss checks).
 */
export function check(dump: TableDump, acked: Acked[], popped: Set<string>, deleted: Set<string>, now = Date.now()): Report {
  const r: Report = {
    sessions: dump.metas.size,
    forks: [],
    lost: [],
    holes: [],
    duplicates: [],
    leftoverAttempts: [],
    orphanItems: [],
    notes: [],
  };
  // I1: a parent with more than one child.
  const children = new Map<string, string[]>();
  for (const m of dump.metas.values())
    if (m.parentSessionId) children.set(m.parentSessionId, [...(children.get(m.parentSessionId) ?? []), m.sessionId]);
  for (const [p, cs] of children) {
    if (cs.length > 1) r.forks.push(`${p} -> ${cs.join(',')}`);
    const pm = dump.metas.get(p);
    if (pm && cs.length === 1 && pm.childSessionId !== cs[0])
      r.forks.push(`${p} names child ${pm.childSessionId} but ${cs[0]} says it is the child`);
  }
  // Group items per session and generation.
  const gens = new Map<string, Map<number, Msg[]>>();
  for (const m of dump.msgs) {
    const sid = sidOfPk(m.pk);
    if (!dump.metas.has(sid)) {
      r.orphanItems.push(`${m.pk} ${m.sk}`);
      continue;
    }
    const g = gens.get(sid) ?? new Map<number, Msg[]>();
    g.set(m.generation, [...(g.get(m.generation) ?? []), m]);
    gens.set(sid, g);
  }
  for (const g of gens.values()) for (const list of g.values()) list.sort((a, b) => a.seq - b.seq);
  // Where each marker is stored (visible part of the active generation, or an older generation).
  const where = new Map<string, string[]>();
  const deletedLineage = new Set<string>();
  const rootOf = (sid: string): string => {
    let cur = dump.metas.get(sid);
    for (let i = 0; cur?.parentSessionId && i < 10_000; i++) cur = dump.metas.get(cur.parentSessionId);
    return cur?.sessionId ?? sid;
  };
  for (const d of deleted) deletedLineage.add(rootOf(d));
  for (const [sid, g] of gens) {
    const meta = dump.metas.get(sid)!;
    for (const [gen, list] of g) {
      const active = gen === (meta.generation ?? 0);
      const visible = active ? list.filter((m) => m.seq <= (meta.lastSeq ?? 0)) : list;
      if (active && visible.length !== (meta.messageCount ?? 0) && !meta.deletedAt) {
        r.notes.push(`${sid} gen ${gen}: ${visible.length} visible items but messageCount ${meta.messageCount}`);
      }
      const seen = new Set<string>();
      for (const m of visible) {
        const mk = markerOf(m.body);
        if (!mk) continue;
        if (seen.has(mk)) r.duplicates.push(`${mk} twice in ${sid} gen ${gen}`);
        seen.add(mk);
        where.set(mk, [...(where.get(mk) ?? []), `${sid}#${gen}${active ? '*' : ''}`]);
      }
    }
  }
  // Lost: acknowledged, never popped, stored nowhere.
  const ackCount = new Map<string, number>();
  for (const a of acked) ackCount.set(a.marker, (ackCount.get(a.marker) ?? 0) + 1);
  for (const a of acked) {
    if (popped.has(a.marker)) continue;
    if (deletedLineage.has(rootOf(a.sessionId))) continue;
    if (!where.has(a.marker)) r.lost.push(`${a.marker} (acked on ${a.sessionId} at ${new Date(a.at).toISOString()})`);
  }
  // A marker live in two active transcripts of one chain (the tip and a non-tip) is a duplicate too.
  for (const [mk, places] of where) {
    const live = places.filter((p) => p.endsWith('*')).map((p) => p.split('#')[0]!);
    const liveTips = live.filter((sid) => {
      const m = dump.metas.get(sid);
      return m && !m.endedAt && !m.childSessionId && !m.deletedAt;
    });
    if (liveTips.length > 1) r.duplicates.push(`${mk} live in ${liveTips.join(',')}`);
  }
  // A6: a popped item never comes back in a live transcript.
  for (const mk of popped) {
    const live = (where.get(mk) ?? []).filter((p) => p.endsWith('*')).map((p) => p.split('#')[0]!);
    for (const sid of live) {
      const m = dump.metas.get(sid);
      if (m && !m.endedAt && !m.childSessionId && !m.deletedAt) r.duplicates.push(`popped ${mk} is back in live ${sid}`);
    }
  }
  // Holes: transitions (parent -> child; generation g -> next active) must carry a suffix of the old transcript.
  const transitions: [string, Msg[], Msg[]][] = [];
  for (const m of dump.metas.values()) {
    const own = gens.get(m.sessionId);
    if (m.childSessionId && !m.deletedAt) {
      const child = dump.metas.get(m.childSessionId);
      const old = own?.get(m.generation ?? 0) ?? [];
      const next = child && !child.deletedAt ? (gens.get(child.sessionId)?.get(0) ?? []) : undefined;
      if (next) transitions.push([`${m.sessionId} -> ${m.childSessionId}`, old, next]);
    }
    if (own && !m.deletedAt) {
      // In place: generations that were active at some point are the archived ones (expiresAt set) and the active one.
      const order = [...own.keys()]
        .sort((a, b) => a - b)
        .filter((gen) => gen === (m.generation ?? 0) || gen === 0 || own.get(gen)!.some((x) => x.expiresAt));
      for (let i = 1; i < order.length; i++)
        transitions.push([`${m.sessionId} gen ${order[i - 1]} -> ${order[i]}`, own.get(order[i - 1]!)!, own.get(order[i]!)!]);
    }
  }
  for (const [name, old, next] of transitions) {
    const nextMarkers = new Set(next.map((x) => markerOf(x.body)).filter(Boolean));
    const oldMarkers = old
      .map((x) => ({ mk: markerOf(x.body), user: /"role":"user"/.test(x.body) }))
      .filter((x) => x.mk && !x.user && !popped.has(x.mk));
    const firstCarried = oldMarkers.findIndex((x) => nextMarkers.has(x.mk));
    if (firstCarried < 0) {
      if (oldMarkers.length > 0) r.holes.push(`${name}: none of ${oldMarkers.length} items carried (last ${oldMarkers.at(-1)!.mk})`);
      continue;
    }
    for (let i = firstCarried; i < oldMarkers.length; i++) {
      const mk = oldMarkers[i]!.mk!;
      if (!nextMarkers.has(mk))
        r.holes.push(`${name}: ${mk} (index ${i} of ${oldMarkers.length}, carried from ${firstCarried}) not carried`);
    }
  }
  // Leftover attempts / seals (after a quiet period longer than the lease TTL).
  for (const m of dump.metas.values()) {
    if (m.attempt && (m.leaseExpiresAt ?? 0) < now)
      r.leftoverAttempts.push(`${m.sessionId} attempt ${m.attempt.attemptId} (${m.attempt.holder}) expired ${m.leaseExpiresAt}`);
  }
  return r;
}

/** Lease keys still present on the Redis nodes (none should remain once everything is quiet past the TTL). */
export async function leaseKeys(urls: string[]): Promise<string[]> {
  const found: string[] = [];
  for (const url of urls) {
    if (new URL(url).hostname !== '127.0.0.1') throw new Error('local Redis only');
    const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1000, retryStrategy: () => null });
    c.on('error', () => undefined);
    try {
      await c.connect();
      const keys = await c.keys('*');
      for (const k of keys) found.push(`${url} ${k} ttl=${await c.pttl(k)}`);
    } catch (e) {
      found.push(`${url} unreachable (${String(e)})`);
    } finally {
      c.disconnect();
    }
  }
  return found;
}
