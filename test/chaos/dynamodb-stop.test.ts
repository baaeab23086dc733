// DynamoDB Local faults on an instance this file owns.
// 1. SIGKILL it while the commit transaction is in flight, then restart it on the same port.
//    DynamoDB Local runs in memory, so the restart loses every item: this case can only prove
//    that the attempt fails with an error (no hang, no false "compressed"), that the lease is
//    released anyway (I3, C2), and that a new attempt works once the store is back.
// 2. SIGSTOP it during the commit for longer than the lease TTL while a rival starts (a paused
//    store, the data survives), then SIGCONT: at most one child and one "rotated" (I1, I2, L6),
//    and after a sweep no attempt record or orphan message is left (S1, S2).
import { randomUUID } from 'node:crypto';
import { ScanCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTable } from '../../infra/table.js';
import { startDynamoDbLocal, type LocalProcess } from '../../infra/local/processes.js';
import { compactSession, type CompactionOutcome } from '../../lib/compaction/index.js';
import { sessionKey, type SessionRef } from '../../lib/session-ref.js';
import { runSweep } from '../../lib/sweep/run-sweep.js';
import { recordCounts } from '../support/chaos/counts.js';
import { makeCoordinator, type Coordinator, seedConversation } from '../support/chaos/coordinator.js';
import { conversation, fixedEngine, sleep } from '../support/chaos/engines.js';
import { waitLeaseFree } from '../support/chaos/invariants.js';

const TABLE = 'chaos-dynamodb-stop';
const TTL_MS = 1000;
let ddbProc: LocalProcess;
let coord: Coordinator;
/** Set by a test; runs as the commit transaction is about to be sent. */
let beforeCommit: (() => Promise<void>) | undefined;
const counts = { racesRun: 0, nodeFaultsInjected: 0, forksFound: 0, leakedLeases: 0 };

async function startStore(port?: number): Promise<void> {
  ddbProc = await startDynamoDbLocal(port);
}

beforeAll(async () => {
  await startStore();
  coord = await makeCoordinator({ dynamodbEndpoint: ddbProc.url, tableName: TABLE });
  await ensureTable(coord.ddb, TABLE);
  coord.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand' && beforeCommit) {
        const hook = beforeCommit;
        beforeCommit = undefined;
        await hook();
      }
      return next(args);
    },
    { step: 'initialize', name: 'chaosBeforeCommit' },
  );
});
afterAll(async () => {
  recordCounts('dynamodb-stop', counts);
  await coord?.close();
  if (ddbProc) {
    try {
      process.kill(ddbProc.pid, 'SIGCONT');
    } catch {
      // already gone
    }
    await ddbProc.stop('SIGKILL');
  }
});

async function seeded(): Promise<SessionRef> {
  const tenantId = `chaos-ddb-${randomUUID()}`;
  return seedConversation(coord.store, tenantId, conversation(8));
}

/** pk -> item count for a tenant, scanned from this file's own small table. */
async function tenantItems(ddb: DynamoDBClient, tenantId: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  let start: Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> | undefined;
  do {
    const page = await ddb.send(
      new ScanCommand({
        TableName: TABLE,
        FilterExpression: 'begins_with(pk, :p)',
        ExpressionAttributeValues: { ':p': { S: `T#${tenantId}#` } },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      const pk = item.pk!.S!;
      out.set(pk, [...(out.get(pk) ?? []), item.sk!.S!]);
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

describe('DynamoDB Local stopped during a commit', () => {
  it('I3 C2 C10: SIGKILL while the commit is in flight: the attempt errors, the lease is released, a restart works', async () => {
    const ref = await seeded();
    const engine = fixedEngine();
    beforeCommit = async () => {
      await ddbProc.stop('SIGKILL');
      counts.nodeFaultsInjected++;
    };
    counts.racesRun++;
    let outcome: CompactionOutcome | undefined;
    let error: unknown;
    try {
      outcome = await compactSession(
        { lease: coord.lease, store: coord.store, engine, leaseTtlMs: 5000 },
        { ref, mode: 'rotate', origin: 'manual', holder: 'ddb-kill' },
      );
    } catch (err) {
      error = err;
    }
    expect(beforeCommit).toBeUndefined(); // the fault really fired at the commit
    expect(engine.calls).toBe(1);
    // Never a false success: either an error reaches the caller or a non-committing outcome.
    if (outcome) expect(outcome.outcome).not.toBe('compressed');
    else expect(error).toBeInstanceOf(Error);
    // The lease lives in Redis, which is fine: it was released, not left to expire.
    expect(await coord.lease.holderOf(sessionKey(ref))).toBeNull();

    await startStore(ddbProc.port);
    await ensureTable(coord.ddb, TABLE);
    const fresh = await seeded();
    const again = await compactSession(
      { lease: coord.lease, store: coord.store, engine: fixedEngine(), leaseTtlMs: 5000 },
      { ref: fresh, mode: 'rotate', origin: 'manual', holder: 'ddb-back' },
    );
    expect(again.outcome).toBe('compressed');
    expect(await coord.store.children(fresh)).toHaveLength(1);
  });

  it('I1 I2 L6 S1 S2: store paused (SIGSTOP) past the lease TTL during a commit while a rival starts: one child, no orphan after a sweep', async () => {
    const ref = await seeded();
    let rival: Promise<CompactionOutcome> | undefined;
    beforeCommit = async () => {
      process.kill(ddbProc.pid, 'SIGSTOP');
      counts.nodeFaultsInjected++;
      // The paused holder's lease expires; a rival takes it and starts its own attempt.
      await sleep(TTL_MS + 300);
      rival = compactSession(
        { lease: coord.lease, store: coord.store, engine: fixedEngine(), leaseTtlMs: TTL_MS },
        { ref, mode: 'rotate', origin: 'turn', holder: 'rival' },
      );
      await sleep(300);
      process.kill(ddbProc.pid, 'SIGCONT');
    };
    counts.racesRun += 2;
    const settle = (p: Promise<CompactionOutcome>) =>
      p.then(
        (o) => o.outcome + (o.outcome === 'compressed' ? `:${o.sessionId}` : ''),
        (e: unknown) => `error:${(e as Error).name}`,
      );
    const first = await settle(
      compactSession(
        { lease: coord.lease, store: coord.store, engine: fixedEngine(), leaseTtlMs: TTL_MS },
        { ref, mode: 'rotate', origin: 'turn', holder: 'paused' },
      ),
    );
    expect(rival).toBeDefined();
    const second = await settle(rival!);

    const children = await coord.store.children(ref);
    counts.forksFound += Math.max(0, children.length - 1);
    expect(children.length).toBeLessThanOrEqual(1);
    const rotated = [first, second].filter((o) => o.startsWith('compressed:'));
    expect(rotated.length).toBe(children.length);
    if (children[0]) expect(rotated).toEqual([`compressed:${children[0].sessionId}`]);

    const free = await waitLeaseFree(coord.lease, ref, TTL_MS + 5000);
    if (!free) counts.leakedLeases++;
    expect(free).toBe(true);
    const sweep = await runSweep({ store: coord.store, now: () => Date.now() + 60_000 });
    expect(sweep.forksFound).toBe(0);
    expect((await coord.store.getSession(ref))?.attempt).toBeUndefined();
    // Every partition left for this tenant is a real session (has META): no orphan child messages.
    const items = await tenantItems(coord.ddb, ref.tenantId);
    for (const [pk, sks] of items) expect(sks, `orphan items under ${pk}`).toContain('META');
    expect(items.size).toBe(1 + children.length);
  });
});
