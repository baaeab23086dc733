// DynamoDB TTL stamps (SPEC C11, H3): `expiresAt` on item rows and the chunks they name, each by
// an update that requires the row to exist (table.expireRow), paced under the partition's write
// budget. Two users: the archive task (a generation replaced in place, attempts.ts) and the ended
// task (`TASK#ended#<generation>`), which the rotation commit puts on the parent in its own
// transaction (commit.ts) and the sweep runs: with the conversation's effective
// endedSessionSeconds set when it runs, every MSG# row of the parent (and their chunks) gets
// `expiresAt = endedAt + seconds`; unset, it only goes away. Reads filter on the expiry anyway
// (history.ts); the stamp is what lets DynamoDB's TTL do the deleting.
import type { SessionRef } from '../../session-ref.js';
import type { StoreTask } from '../types.js';
import { attemptShardOf, MSG_PREFIX, sessionPk, taskSk } from './keys.js';
import type { MetaItem } from './meta-row.js';
import { isHeadSk, remotePartPrefix, type RawRow } from './rows.js';
import type { Table } from './table.js';

/**
 * Stamps `expiresAt` on every row under `pk`/`prefix` and the chunks each names. A row already
 * stamped keeps its stamp, unless `lowerOnly` and the stamp is later than `expiresAt` (then it is
 * brought down: an ended session's archived generations never outlive the session's own retention).
 * Returns the items stamped (counted on head rows).
 */
export async function expireUnder(table: Table, pk: string, prefix: string, expiresAt: number, lowerOnly = false): Promise<number> {
  const due = (row: RawRow) => row.expiresAt === undefined || (lowerOnly && row.expiresAt > expiresAt);
  let items = 0;
  for await (const rows of table.pagesWithPrefix<RawRow>(pk, prefix)) {
    for (const row of rows) {
      const chunks = row.w !== undefined ? await table.queryPrefix<RawRow>(pk, remotePartPrefix(row.w, row.h ?? 0)) : [];
      for (const chunk of chunks) if (due(chunk)) await table.expireRow(chunk, expiresAt);
      const kept = !due(row) || (await table.expireRow(row, expiresAt));
      if (kept && isHeadSk(row.sk)) items += row.body !== undefined ? 1 : (row.idx ?? '').split(',').length;
    }
  }
  return items;
}

/** The ended task a rotation commit puts on its parent, due at once (the sweep runs it). */
export function endedTaskItem(table: Table, ref: SessionRef, generation: number): Record<string, unknown> {
  const pk = sessionPk(ref);
  return {
    pk,
    sk: taskSk('ended', generation),
    kind: 'ended',
    generation,
    attemptShard: attemptShardOf(pk, table.attemptShards),
    leaseExpiresAt: table.now(),
  };
}

/**
 * Runs an ended task: `endedSessionSeconds` is the conversation's effective setting now. A session
 * that is gone, deleted (its purge removes everything) or not rotated gets no stamp. The task item
 * goes last, so a run that dies is run again. Returns the items stamped.
 */
export async function runEndedTask(
  table: Table,
  task: StoreTask,
  meta: MetaItem | undefined,
  endedSessionSeconds?: number,
): Promise<number> {
  const pk = sessionPk(task.ref);
  let touched = 0;
  if (meta?.endedAt && meta.childSessionId && !meta.deletedAt && endedSessionSeconds !== undefined) {
    // Rounded up: DynamoDB's TTL never deletes a row before reads stop showing it.
    const expiresAt = Math.ceil(Date.parse(meta.endedAt) / 1000) + endedSessionSeconds;
    touched = await expireUnder(table, pk, MSG_PREFIX, expiresAt, true);
  }
  await table.deleteAll([{ pk, sk: taskSk('ended', task.generation) }]);
  return touched;
}
