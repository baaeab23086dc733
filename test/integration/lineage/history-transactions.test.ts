// SPEC X1 with A6 on the store: a replace_suffix that removes an item an in-flight compaction
// snapshotted makes that compaction's commit fail as stale, as a pop does.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { withEstimates } from '../../../lib/lineage/prepare.js';
import type { Item } from '../../../lib/items/types.js';
import { begin, commitInput, makeStore, msg, msgs, newSession } from './support.js';

const store = makeStore();

function replaceInput(expectedSuffix: Item[], replacement: Item[]) {
  return {
    prepare: (session: Parameters<typeof withEstimates>[1]) => ({ expectedSuffix, replacement: withEstimates(replacement, session) }),
    idempotency: { key: `op-${randomUUID()}`, requestHash: 'h' },
    respond: () => ({ status: 200, body: null }),
  };
}

describe('X1/A6: replace_suffix and in-flight compactions', () => {
  it('X1/A6: replacing a snapshotted item makes the compaction stale; its commit writes nothing', async () => {
    const ref = await newSession(store, msgs(1, 5));
    const b = await begin(store, ref);
    await store.replaceSuffix(ref, replaceInput([msg(4), msg(5)], [msg(9)]));
    await expect(store.commitInPlace(ref, b, commitInput([msg(7)]))).rejects.toThrow(/removed/);
    expect(await store.readAll(ref)).toEqual([...msgs(1, 3), msg(9)]);
  });

  it('X1/A6: replacing only items appended after the snapshot leaves the compaction free to commit (they are its tail)', async () => {
    const ref = await newSession(store, msgs(1, 5));
    const b = await begin(store, ref);
    await store.appendItems(ref, { prepare: (s) => withEstimates([msg(6)], s) });
    await store.replaceSuffix(ref, replaceInput([msg(6)], [msg(8)]));
    await store.commitInPlace(ref, b, commitInput([msg(7)]));
    expect(await store.readAll(ref)).toEqual([msg(7), msg(8)]);
  });
});
