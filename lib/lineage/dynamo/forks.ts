// The fork audit (SPEC S2, I1). Recent: the rotations since a point in time, read from the
// sparse, sharded rotationsByTime index, then each of their parents' children: the cost follows
// the number of new rotations, not the history. All: the whole childrenByParent index (operators).
import { ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { ForkReport } from '../types.js';
import { allShards, CHILDREN_INDEX, ROTATIONS_INDEX } from './keys.js';
import { childKeysOf } from './links.js';
import { isConditionFailure } from './retry.js';
import { forEachShard, type Key, type Table } from './table.js';

const SWEEP_CHECKPOINT: Key = { pk: 'SWEEP', sk: 'CHECKPOINT' };

export class Forks {
  constructor(private readonly table: Table) {}

  async recent(since: number): Promise<ForkReport[]> {
    const sinceIso = new Date(since).toISOString();
    const parents = new Set<string>();
    await forEachShard(allShards('R', this.table.rotationShards), async (shard) => {
      const rows = await this.table.queryIndex<{ parentKey: string }>({
        IndexName: ROTATIONS_INDEX,
        KeyConditionExpression: '#s = :s AND #c >= :since',
        ExpressionAttributeNames: { '#s': 'rotationShard', '#c': 'createdAt' },
        ExpressionAttributeValues: { ':s': shard, ':since': sinceIso },
      });
      for (const r of rows) parents.add(r.parentKey);
    });
    const forks: ForkReport[] = [];
    for (const parentKey of parents) {
      const children = await childKeysOf(this.table, parentKey);
      if (children.length > 1) forks.push(await this.report(children));
    }
    return forks;
  }

  async all(): Promise<ForkReport[]> {
    const byParent = new Map<string, Key[]>();
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.table.send('find forks', () =>
        this.table.doc.send(new ScanCommand({ TableName: this.table.name, IndexName: CHILDREN_INDEX, ExclusiveStartKey: start })),
      );
      for (const item of (out.Items ?? []) as (Key & { parentKey: string })[]) {
        byParent.set(item.parentKey, [...(byParent.get(item.parentKey) ?? []), { pk: item.pk, sk: item.sk }]);
      }
      start = out.LastEvaluatedKey;
    } while (start);
    const forks: ForkReport[] = [];
    for (const keys of byParent.values()) if (keys.length > 1) forks.push(await this.report(keys));
    return forks;
  }

  private async report(childKeys: Key[]): Promise<ForkReport> {
    const children = await this.table.batchGetMetas(childKeys);
    const first = children[0]!;
    return {
      parent: { tenantId: first.tenantId, sessionId: first.parentSessionId ?? '?' },
      childSessionIds: children.map((c) => c.sessionId).sort(),
    };
  }

  async checkpoint(): Promise<number | null> {
    const item = await this.table.getItem<{ at: number }>(SWEEP_CHECKPOINT);
    return item?.at ?? null;
  }

  async saveCheckpoint(at: number): Promise<void> {
    // Never moves backwards: two sweeps racing (S3) both leave the later point.
    try {
      await this.table.send('save sweep checkpoint', () =>
        this.table.doc.send(
          new UpdateCommand({
            TableName: this.table.name,
            Key: SWEEP_CHECKPOINT,
            UpdateExpression: 'SET #at = :at',
            ConditionExpression: 'attribute_not_exists(#at) OR #at < :at',
            ExpressionAttributeNames: { '#at': 'at' },
            ExpressionAttributeValues: { ':at': at },
          }),
        ),
      );
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }
}
