// Chunks written ahead of an append's commit (an append beyond one transaction, rows.ts), and
// the task that removes them when no commit references them (SPEC A7, S2).
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { EXISTS } from './conditions.js';
import { partsTaskSk } from './keys.js';
import { isConditionFailure } from './retry.js';
import { PART_PREFIX } from './rows.js';
import type { Table } from './table.js';

/**
 * Removes the chunks of `scope` (a write id, or `<write id>#<row>`). The task item goes first,
 * conditionally: an append's commit lands only while its task exists, so once the delete
 * succeeds no row can ever reference these chunks; if the task is gone, nothing is removed.
 * Returns the chunks removed.
 */
export async function runPartsTask(table: Table, pk: string, scope: string): Promise<number> {
  try {
    await table.send('end chunk task', () =>
      table.doc.send(new DeleteCommand({ TableName: table.name, Key: { pk, sk: partsTaskSk(scope) }, ConditionExpression: EXISTS })),
    );
  } catch (err) {
    if (isConditionFailure(err)) return 0;
    throw err;
  }
  const keys = await table.keysWithPrefix(pk, `${PART_PREFIX}${scope}#`);
  await table.deleteAll(keys);
  return keys.length;
}
