// S2 cost flat in history (issue 15): the sweep's fork audit reads the rotations since its last
// run, so the items one run reads do not grow with 10x more older rotations before its
// checkpoint. Items read are counted on the client: Count of every Query/Scan, items returned
// by GetItem/BatchGetItem. A first run (no checkpoint yet, a 24 h window) is the control: it
// does read the older rotations, so the count would notice if the audit did.
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';
import { asIs } from '../../../lib/lineage/prepare.js';
import { runSweep } from '../../../lib/sweep/run-sweep.js';
import { mapLimit } from '../../fixtures/map-limit.js';
import { storeOnOwnTable } from './own-table.js';
import { transcript } from './killed-invocation.js';

const NEW_ROTATIONS = 5;
const clients: DynamoDBClient[] = [];
afterAll(() => clients.forEach((c) => c.destroy()));

function itemsRead(output: unknown): number {
  const o = output as { Count?: number; Item?: unknown; Responses?: Record<string, unknown[]> };
  if (typeof o.Count === 'number') return o.Count;
  if (o.Responses) return Object.values(o.Responses).reduce((s, items) => s + items.length, 0);
  return o.Item ? 1 : 0;
}

async function rotations(store: DynamoLineageStore, n: number): Promise<void> {
  const tenantId = `t-${randomUUID()}`;
  await mapLimit(Array.from({ length: n }), 8, async () => {
    const r = await store.createSession({ tenantId, source: 'fork-audit-cost' });
    if (r.replayed) throw new Error('unexpected replay');
    const ref = { tenantId, sessionId: r.session.sessionId };
    await store.appendItems(ref, { prepare: asIs(transcript(3, 3)) });
    const begun = await store.beginAttempt(ref, {
      holder: 'rotate',
      leaseExpiresAt: Date.now() + 60_000,
      activityLabel: 'compaction started',
    });
    await store.commitRotation(ref, begun, { compacted: transcript(1, 2), tokenEstimates: [1], activityLabel: 'compaction completed' });
  });
}

/** Items read by a first sweep (no checkpoint) and by the next one, on a table with `old` rotations three hours old. */
async function sweepReads(old: number): Promise<{ first: number; next: number }> {
  const own = await storeOnOwnTable('fork-audit-cost');
  clients.push(own.ddb);
  let reading = false;
  let read = 0;
  own.ddb.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      if (reading) read += itemsRead(out.output);
      return out;
    },
    { step: 'initialize', name: 'count-items-read' },
  );
  const past = new DynamoLineageStore({ client: own.ddb, tableName: own.tableName, now: () => Date.now() - 3 * 3600_000 });
  await rotations(past, old);
  const measured = async () => {
    read = 0;
    reading = true;
    try {
      const r = await runSweep({ store: own.store });
      expect(r.forksFound).toBe(0);
      return read;
    } finally {
      reading = false;
    }
  };
  const first = await measured();
  await rotations(own.store, NEW_ROTATIONS);
  const next = await measured();
  return { first, next };
}

describe('fork audit cost is flat in history (S2, issue 15)', () => {
  it('S2: a sweep run reads as many items with 100 older rotations before its checkpoint as with 10', async () => {
    const ten = await sweepReads(10);
    const hundred = await sweepReads(100);
    // The same new rotations since the checkpoint, the same reads, whatever the history.
    expect(hundred.next).toBe(ten.next);
    // It did audit the new ones (a rotation row and its parent's one child each, at least).
    expect(ten.next).toBeGreaterThanOrEqual(2 * NEW_ROTATIONS);
    // Control: the first run, with no checkpoint, covers the older rotations and reads grow with them.
    expect(hundred.first).toBeGreaterThan(ten.first + 2 * 80);
  }, 180_000);
});
