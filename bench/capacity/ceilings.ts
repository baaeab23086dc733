// From measured costs to ceilings. A key design caps the whole service at
//   spread × min(1,000 WCU / its WCU per operation, 3,000 RCU / its RCU per operation)
// operations per second, where spread is its shard count, 1 for a single item, and unbounded
// for a per-entity key (every new session, message id or tenant+key is a new partition: then
// the ceiling is per entity, e.g. one hot session). Sharded keys assume the hash spreads load evenly.
import { costUsd, TABLE_QUOTA } from './prices.js';
import { load, PARTITION_RCU, PARTITION_WCU } from './capacity-rules.js';
import { familiesOf, familyOf, type ShardSettings, type Spread } from './key-families.js';
import type { MeasuredOperation, Proof } from './operations.js';

export const TARGETS = { compaction: 10_000, append: 100_000 } as const;
type Kind = keyof typeof TARGETS | 'other';

export interface KeyCeiling {
  family: string;
  pattern: string;
  spread: string;
  kind: Kind;
  /** The operation of this kind that loads the key most, and its load on the key. */
  operation: string;
  wcu: number;
  rcu: number;
  /** Operations per second the key design allows service-wide; null: no service-wide ceiling. */
  perSecond: number | null;
  formula: string;
  target: number | null;
  met: boolean | null;
  proof?: string;
}

export interface EntityCeiling {
  family: string;
  operation: string;
  wcu: number;
  rcu: number;
  /** On one entity (one session, one message id, ...). */
  perSecond: number;
  itemsPerSecond?: number;
}

export interface TargetCheck {
  operation: string;
  kind: keyof typeof TARGETS;
  target: number;
  /** The lowest service-wide ceiling among the keys it writes or reads; null when none is shared. */
  ceiling: number | null;
  limitedBy: string | null;
  met: boolean;
}

export interface CostRow {
  operation: string;
  writeUnits: number;
  readUnits: number;
  usdPer1000: number;
  /** At the default per-table on-demand quota (adjustable). */
  perSecondAtTableQuota: number;
  /** WRU/s and RRU/s the target rate needs (compactions and appends only). */
  unitsPerSecondAtTarget?: { write: number; read: number };
}

export interface Model {
  keys: KeyCeiling[];
  entities: EntityCeiling[];
  targets: TargetCheck[];
  costs: CostRow[];
}

interface Load {
  op: MeasuredOperation;
  wcu: number;
  rcu: number;
  /** The busiest single partition of the family in this operation. */
  maxWcu: number;
  maxRcu: number;
}

const kindOf = (op: MeasuredOperation): Kind => op.counts ?? 'other';
const ratio = (limit: number, used: number) => (used > 0 ? limit / used : Number.POSITIVE_INFINITY);
const perPartition = (w: number, r: number) => Math.min(ratio(PARTITION_WCU, w), ratio(PARTITION_RCU, r));

function spreadText(s: Spread): string {
  if (s.kind === 'sharded') return `${s.shards} shards (${s.setting})`;
  if (s.kind === 'single') return 'one partition';
  return `one partition per ${s.entity}`;
}

/** A per-entity key whose proof found two entities sharing a partition is really one partition. */
function effectiveSpread(family: string, spread: Spread, proofs: readonly Proof[]): { spread: Spread; proof?: string } {
  const proof = proofs.find((p) => p.family === family);
  if (!proof) return { spread };
  const all = proof.partitions.flat();
  const distinct = new Set(all).size;
  const ok = proof.partitions.every((p) => p.length > 0) && distinct === all.length;
  const text = `${proof.instances.join(' and ')} wrote ${distinct} distinct partition(s)`;
  return ok ? { spread, proof: text } : { spread: { kind: 'single' }, proof: `${text}: SHARED` };
}

export function deriveModel(ops: readonly MeasuredOperation[], proofs: readonly Proof[], shards: ShardSettings): Model {
  const loads = new Map<string, Load[]>();
  for (const op of ops) {
    const perFamily = new Map<string, Load>();
    for (const u of op.partitions) {
      const l = perFamily.get(u.family) ?? { op, wcu: 0, rcu: 0, maxWcu: 0, maxRcu: 0 };
      l.wcu += u.wcu;
      l.rcu += u.rcu;
      l.maxWcu = Math.max(l.maxWcu, u.wcu);
      l.maxRcu = Math.max(l.maxRcu, u.rcu);
      perFamily.set(u.family, l);
    }
    for (const [family, l] of perFamily) loads.set(family, [...(loads.get(family) ?? []), l]);
  }

  const keys: KeyCeiling[] = [];
  const entities: EntityCeiling[] = [];
  const shared = new Map<string, { family: string; perSecond: number }[]>();
  for (const [familyName, familyLoads] of loads) {
    const sample = ops.flatMap((o) => o.partitions).find((u) => u.family === familyName)!;
    const family = familyOf(sample.target, sample.partition, shards);
    const { spread, proof } = effectiveSpread(familyName, family.spread, proofs);
    for (const kind of ['compaction', 'append', 'other'] as const) {
      const ofKind = familyLoads.filter((l) => kindOf(l.op) === kind);
      if (ofKind.length === 0) continue;
      const ceilingOf = (l: Load): number | null => {
        if (spread.kind === 'per-entity') return null;
        return (spread.kind === 'sharded' ? spread.shards : 1) * perPartition(l.wcu, l.rcu);
      };
      for (const l of ofKind) {
        const c = ceilingOf(l);
        if (c !== null) shared.set(l.op.name, [...(shared.get(l.op.name) ?? []), { family: familyName, perSecond: c }]);
      }
      const worst = [...ofKind].sort((a, b) => (ceilingOf(a) ?? Infinity) - (ceilingOf(b) ?? Infinity) || b.wcu - a.wcu)[0]!;
      const perSecond = ceilingOf(worst);
      const target = kind === 'other' ? null : TARGETS[kind];
      keys.push({
        family: familyName,
        pattern: family.pattern,
        spread: spreadText(spread),
        kind,
        operation: worst.op.name,
        wcu: worst.wcu,
        rcu: worst.rcu,
        perSecond,
        formula: formulaOf(spread, worst),
        target,
        met: target === null ? null : perSecond === null || perSecond >= target,
        ...(proof ? { proof } : {}),
      });
    }
    if (spread.kind === 'per-entity') {
      for (const l of familyLoads) {
        const perSecond = perPartition(l.maxWcu, l.maxRcu);
        entities.push({
          family: familyName,
          operation: l.op.name,
          wcu: l.maxWcu,
          rcu: l.maxRcu,
          perSecond,
          ...(l.op.items ? { itemsPerSecond: perSecond * l.op.items } : {}),
        });
      }
    }
  }

  const targets: TargetCheck[] = ops.flatMap((op) => {
    const kind = op.counts;
    if (!kind) return [];
    const lowest = [...(shared.get(op.name) ?? [])].sort((a, b) => a.perSecond - b.perSecond)[0];
    const ceiling = lowest?.perSecond ?? null;
    return [
      {
        operation: op.name,
        kind,
        target: TARGETS[kind],
        ceiling,
        limitedBy: lowest?.family ?? null,
        met: ceiling === null || ceiling >= TARGETS[kind],
      },
    ];
  });

  const costs: CostRow[] = ops.map((op) => {
    const w = op.answer.wcu + (op.background?.wcu ?? 0);
    const r = op.answer.rcu + (op.background?.rcu ?? 0);
    const target = op.counts ? TARGETS[op.counts] : undefined;
    return {
      operation: op.name,
      writeUnits: w,
      readUnits: r,
      usdPer1000: costUsd(w * 1000, r * 1000),
      perSecondAtTableQuota: Math.min(ratio(TABLE_QUOTA.writeUnitsPerSecond, w), ratio(TABLE_QUOTA.readUnitsPerSecond, r)),
      ...(target ? { unitsPerSecondAtTarget: { write: w * target, read: r * target } } : {}),
    };
  });
  return { keys, entities, targets, costs };
}

function formulaOf(spread: Spread, l: Load): string {
  const parts = [l.wcu > 0 ? `1,000 WCU / ${fmt(l.wcu)}` : '', l.rcu > 0 ? `3,000 RCU / ${fmt(l.rcu)}` : ''].filter(Boolean).join(' and ');
  if (spread.kind === 'per-entity') return `none service-wide (each ${spread.entity} is its own partition)`;
  const limit = `min(${parts})`;
  return spread.kind === 'sharded' ? `${spread.shards} × ${limit}` : limit;
}

export function fmt(x: number, digits = 1): string {
  if (!Number.isFinite(x)) return '∞';
  const r = Math.round(x * 10 ** digits) / 10 ** digits;
  return r.toLocaleString('en-US', { maximumFractionDigits: digits });
}

/**
 * A compaction that ran long enough for `k` lease refreshes: the measured compaction plus k
 * measured refreshes. A refresh lands on the compacted session and its attemptsByExpiry shard,
 * i.e. on the compaction's own partitions of those families (the parent: the one it read).
 */
export function withRefreshes(op: MeasuredOperation, refresh: MeasuredOperation, k: number, why: string): MeasuredOperation {
  const partitions = op.partitions.map((u) => ({ ...u }));
  for (const r of refresh.partitions) {
    const into = partitions.filter((u) => u.family === r.family && u.target === r.target).sort((a, b) => b.rcu - a.rcu)[0];
    if (into) {
      into.wcu += k * r.wcu;
      into.rcu += k * r.rcu;
    } else partitions.push({ ...r, wcu: k * r.wcu, rcu: k * r.rcu });
  }
  const add = (a: MeasuredOperation['answer'], b: MeasuredOperation['answer']) => ({
    ...a,
    calls: a.calls + k * b.calls,
    wcu: a.wcu + k * b.wcu,
    rcu: a.rcu + k * b.rcu,
    bytesWritten: a.bytesWritten + k * b.bytesWritten,
    bytesRead: a.bytesRead + k * b.bytesRead,
  });
  const perNode = op.redis.perNode.map((n, i) => {
    const out = { ...n };
    for (const [cmd, c] of Object.entries(refresh.redis.perNode[i] ?? {})) out[cmd] = (out[cmd] ?? 0) + k * c;
    return out;
  });
  return {
    ...op,
    name: `${op.name} + ${k} lease refreshes`,
    note: why,
    derivedFrom: `${op.name} + ${k} × ${refresh.name}`,
    answer: add(op.answer, refresh.answer),
    redis: { rounds: op.redis.rounds + k * refresh.redis.rounds, perNode },
    partitions: partitions.sort((a, b) => load(b) - load(a)),
    families: familiesOf(partitions),
  };
}
