// Issue 15: the shard counts are configuration. ATTEMPT_SHARDS / ROTATION_SHARDS reach the store
// the runtime builds (defaults from lib/lineage/dynamo/keys.ts), and the store writes its
// attempts into a shard below the configured count.
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { attemptShardOf, DEFAULT_ATTEMPT_SHARDS, DEFAULT_ROTATION_SHARDS, metaKey, sessionPk } from '../../../lib/lineage/dynamo/keys.js';
import { Runtime } from '../../../lib/runtime.js';

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.close()));
});

function runtime(extra: Record<string, string> = {}): Runtime {
  const rt = new Runtime({ env: { ...process.env, ...extra } });
  runtimes.push(rt);
  return rt;
}

describe('shard settings (issue 15)', () => {
  it('defaults come from keys.ts', async () => {
    const { store } = await runtime({ ATTEMPT_SHARDS: '', ROTATION_SHARDS: '' }).core();
    expect([store['table'].attemptShards, store['table'].rotationShards]).toEqual([DEFAULT_ATTEMPT_SHARDS, DEFAULT_ROTATION_SHARDS]);
  });

  it('ATTEMPT_SHARDS and ROTATION_SHARDS reach the store, which shards its attempts by them', async () => {
    const { store, dynamo, config } = await runtime({ ATTEMPT_SHARDS: '256', ROTATION_SHARDS: '8' }).core();
    expect([store['table'].attemptShards, store['table'].rotationShards]).toEqual([256, 8]);
    const created = await store.createSession({ tenantId: `t-${randomUUID()}`, source: 'shard-settings' });
    if (created.replayed) throw new Error('unexpected replay');
    const ref = { tenantId: created.session.tenantId, sessionId: created.session.sessionId };
    await store.beginAttempt(ref, { holder: 'h', leaseExpiresAt: Date.now() + 60_000, activityLabel: 'compaction started' });
    const { pk, sk } = metaKey(ref);
    const raw = await dynamo.send(
      new GetItemCommand({ TableName: config.tableName, Key: { pk: { S: pk }, sk: { S: sk } }, ConsistentRead: true }),
    );
    expect(raw.Item?.attemptShard?.S).toBe(attemptShardOf(sessionPk(ref), 256));
  });
});
