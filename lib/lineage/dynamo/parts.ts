// Chunks written ahead of an append's commit (an append beyond one transaction, rows.ts), rows
// written ahead of a compaction's commit (commit.ts), and the task that removes them when no
// commit references them (SPEC A7, S2).
import { randomUUID } from 'node:crypto';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { EXISTS } from './conditions.js';
import { attemptShardOf, partsTaskSk } from './keys.js';
import { isConditionFailure } from './retry.js';
import { PART_PREFIX, rowItems, type Encoded } from './rows.js';
import type { Table, TransactItem } from './table.js';

/**
 * How long chunks written ahead of a commit wait before the sweep may remove them: past the
 * longest Lambda invocation (15 min), so only chunks whose writer is gone are removed.
 */
export const PARTS_GRACE_MS = 30 * 60_000;

/**
 * Removes the chunks of `scope` (a write id, or `<write id>#<row>`) and the rows the task lists
 * (`keys`: rows a compaction wrote ahead of its commit). The task item goes first,
 * conditionally: a commit lands only while its task exists, so once the delete succeeds no
 * record can ever reference these rows; if the task is gone, nothing is removed.
 * Returns the rows removed.
 */
export async function runPartsTask(table: Table, pk: string, scope: string): Promise<number> {
  let task: { keys?: string[] } | undefined;
  try {
    const out = await table.send('end chunk task', () =>
      table.doc.send(
        new DeleteCommand({
          TableName: table.name,
          Key: { pk, sk: partsTaskSk(scope) },
          ConditionExpression: EXISTS,
          ReturnValues: 'ALL_OLD',
        }),
      ),
    );
    task = out.Attributes as { keys?: string[] } | undefined;
  } catch (err) {
    if (isConditionFailure(err)) return 0;
    throw err;
  }
  const keys = [...(await table.keysWithPrefix(pk, `${PART_PREFIX}${scope}#`)), ...(task?.keys ?? []).map((sk) => ({ pk, sk }))];
  await table.deleteAll(keys);
  return keys.length;
}

/**
 * Writes an append's chunks ahead of its commit (beyond one transaction): first a task the
 * sweep runs if the commit never lands, then the chunks under a fresh write id. Returns the id.
 */
export async function writeParts(table: Table, pk: string, groups: readonly Encoded[][]): Promise<string> {
  const w = randomUUID();
  await table.putAll([partsTask(table, pk, w, table.now() + PARTS_GRACE_MS)]);
  await table.putAll(rowItems(pk, 0, 1, groups, w).parts);
  return w;
}

/**
 * The sweep's task for chunks of write `scope` (a write id, or one row of it) once `dueAt`
 * passes, and for the rows `keys` under `pk` (a compaction's rows written ahead of its commit).
 */
export function partsTask(table: Table, pk: string, scope: string, dueAt: number, keys?: readonly string[]): Record<string, unknown> {
  return {
    pk,
    sk: partsTaskSk(scope),
    kind: 'parts',
    scope,
    attemptShard: attemptShardOf(pk, table.attemptShards),
    leaseExpiresAt: dueAt,
    ...(keys ? { keys: [...keys] } : {}),
  };
}

/** The commit removes the task, and lands only while it exists: chunks the sweep removed are never referenced. */
export function partsTaskCheck(table: Table, pk: string, w: string): TransactItem {
  return { Delete: { TableName: table.name, Key: { pk, sk: partsTaskSk(w) }, ConditionExpression: EXISTS } };
}

export async function dropParts(table: Table, pk: string, w: string): Promise<void> {
  await runPartsTask(table, pk, w).catch((err: unknown) =>
    table.warn('removing unused chunks failed; the sweep will', err, { pk, writeId: w }),
  );
}
