// The sweep's first request is a whole sweep run, and most of it is one Query on every shard of
// attemptsByExpiry and of rotationsByTime (the shard counts issue 15 sized for throughput). This
// times those Queries alone, bare, at the sweep's own concurrency, on a fresh client (fresh
// connections, as in a cold container): the part of the sweep's cold init that is DynamoDB's
// time (here DynamoDB Local's, which spends milliseconds of CPU per Query on a 2-core box).
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../lib/aws-clients.js';
import { allShards, ATTEMPTS_INDEX, DEFAULT_ATTEMPT_SHARDS, DEFAULT_ROTATION_SHARDS, ROTATIONS_INDEX } from '../lib/lineage/dynamo/keys.js';
import { forEachShard } from '../lib/lineage/dynamo/table.js';

export const SWEEP_SHARD_QUERIES = DEFAULT_ATTEMPT_SHARDS + DEFAULT_ROTATION_SHARDS;

export async function bareShardQueriesMs(endpoint: string | undefined, region: string | undefined, tableName: string): Promise<number> {
  const ddb = createDynamoClient({ endpoint, region });
  const now = Date.now();
  const query = (index: string, condition: string, names: Record<string, string>, shard: string, bound: string) =>
    ddb.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: index,
        KeyConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ':s': { S: shard }, ':b': index === ATTEMPTS_INDEX ? { N: bound } : { S: bound } },
      }),
    );
  const started = performance.now();
  try {
    await forEachShard(allShards('A', DEFAULT_ATTEMPT_SHARDS), (s) =>
      query(ATTEMPTS_INDEX, '#s = :s AND #e < :b', { '#s': 'attemptShard', '#e': 'leaseExpiresAt' }, s, String(now)),
    );
    const since = new Date(now - 24 * 3600_000).toISOString();
    await forEachShard(allShards('R', DEFAULT_ROTATION_SHARDS), (s) =>
      query(ROTATIONS_INDEX, '#s = :s AND #c >= :b', { '#s': 'rotationShard', '#c': 'createdAt' }, s, since),
    );
    return performance.now() - started;
  } finally {
    ddb.destroy();
  }
}
