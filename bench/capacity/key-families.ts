// Which key design a partition key value belongs to, and how far that design spreads load:
// per entity (a new session, message id or tenant+key is a new partition), over a fixed number
// of shards, or one item for the whole service. The bench proves "per entity" by running an
// operation for two entities and finding two partitions (proofs in index.ts).
export type Spread = { kind: 'per-entity'; entity: string } | { kind: 'sharded'; shards: number; setting: string } | { kind: 'single' };

export interface Family {
  name: string;
  /** The key as the design writes it. */
  pattern: string;
  spread: Spread;
}

export interface ShardSettings {
  attemptShards: number;
  rotationShards: number;
}

export function familyOf(target: string, partition: string, shards: ShardSettings): Family {
  if (target === 'attemptsByExpiry') {
    return {
      name: 'attemptsByExpiry',
      pattern: 'attemptShard = A#<n>',
      spread: { kind: 'sharded', shards: shards.attemptShards, setting: 'ATTEMPT_SHARDS' },
    };
  }
  if (target === 'rotationsByTime') {
    return {
      name: 'rotationsByTime',
      pattern: 'rotationShard = R#<n>',
      spread: { kind: 'sharded', shards: shards.rotationShards, setting: 'ROTATION_SHARDS' },
    };
  }
  if (target === 'childrenByParent')
    return { name: 'childrenByParent', pattern: 'parentKey = <parent pk>', spread: { kind: 'per-entity', entity: 'parent session' } };
  if (/^T#[^#]+#S#[^#]+$/.test(partition))
    return { name: 'session', pattern: 'T#<tenant>#S#<session>', spread: { kind: 'per-entity', entity: 'session' } };
  if (/^T#[^#]+#IDEM#[0-9a-f]+$/.test(partition)) {
    return {
      name: 'create idempotency',
      pattern: 'T#<tenant>#IDEM#<sha256(key)>',
      spread: { kind: 'per-entity', entity: 'tenant + Idempotency-Key' },
    };
  }
  if (partition.startsWith('IDEMPOTENCY#after-turn#')) {
    return {
      name: 'after-turn idempotency',
      pattern: 'IDEMPOTENCY#after-turn#<messageId>',
      spread: { kind: 'per-entity', entity: 'SQS message id' },
    };
  }
  if (partition.startsWith('IDEMPOTENCY#'))
    return { name: 'after-turn idempotency (static key)', pattern: partition, spread: { kind: 'single' } };
  if (partition === 'SWEEP') return { name: 'sweep checkpoint', pattern: 'SWEEP / CHECKPOINT', spread: { kind: 'single' } };
  if (partition.startsWith('APIKEY#'))
    return { name: 'API key', pattern: 'APIKEY#<sha256(key)>', spread: { kind: 'per-entity', entity: 'API key' } };
  return { name: `other (${partition.slice(0, 24)})`, pattern: partition, spread: { kind: 'single' } };
}

/** One partition's load in one operation. */
export interface PartitionUse {
  target: string;
  partition: string;
  family: string;
  wcu: number;
  rcu: number;
}

/** One key design's load in one operation: how many of its partitions, and their sum. */
export interface FamilyUse {
  family: string;
  partitions: number;
  wcu: number;
  rcu: number;
}

export function familiesOf(uses: readonly PartitionUse[]): FamilyUse[] {
  const byFamily = new Map<string, FamilyUse>();
  for (const u of uses) {
    const f = byFamily.get(u.family) ?? { family: u.family, partitions: 0, wcu: 0, rcu: 0 };
    f.partitions++;
    f.wcu += u.wcu;
    f.rcu += u.rcu;
    byFamily.set(u.family, f);
  }
  return [...byFamily.values()];
}
