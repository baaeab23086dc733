// The purge of a deleted session (SPEC A6, K3, H4: erase means erase). Everything stored under the
// session's key goes: item rows of every generation (the live one and the archived ones an in-place
// compaction left under their TTL), their inline parts, chunks written ahead of a commit (PART#)
// and the tasks that name them, archive and ended tasks, Idempotency-Key records with their stored answers
// (appends, history transactions' operation ids), held attempts' outcomes (HELD#), and a pending
// child's rows. Outside it: the create's key record (T#<tenant>#IDEM#..., named on the record), and
// when the whole conversation went (`erase`), that incarnation's conversation-scoped keys (branches'
// keys included) and the session's record itself: with the conversation gone no relative needs it.
// Idempotent: a purge that dies is run again (by the sweep once the task is due).
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import type { SessionRef } from '../../session-ref.js';
import type { ConversationScope } from '../types.js';
import { CREATE_KEY_OF_SESSION, ERASE_ONLY_DELETED } from './conditions.js';
import { conversationIdempotencyPrefix, conversationKey } from './conversation-row.js';
import { expression } from './expression.js';
import { HELD_PREFIX, IDEM_PREFIX, metaKey, MSG_PREFIX, partsTaskSk, sessionPk, TASK_PREFIX, taskSk } from './keys.js';
import { isConditionFailure } from './retry.js';
import { PART_PREFIX } from './rows.js';
import type { Key, Table } from './table.js';

interface PurgeTask {
  pendingChildId?: string;
  erase?: ConversationScope;
}

export async function purgeSession(
  table: Table,
  ref: SessionRef,
  removePendingChild: (ref: SessionRef, childId: string) => Promise<number>,
): Promise<number> {
  const pk = sessionPk(ref);
  const task = await table.getItem<PurgeTask>({ pk, sk: taskSk('purge', 0) });
  let touched = 0;
  const prefixes = [MSG_PREFIX, IDEM_PREFIX, PART_PREFIX, HELD_PREFIX, partsTaskSk(''), `${TASK_PREFIX}archive#`, `${TASK_PREFIX}ended#`];
  for (const prefix of prefixes) touched += await table.deletePaced(pk, prefix);
  if (task?.pendingChildId) touched += await removePendingChild(ref, task.pendingChildId);
  const meta = await table.getItem<{ createKeyPk?: string }>(metaKey(ref));
  if (meta?.createKeyPk) touched += await deleteIf(table, { pk: meta.createKeyPk, sk: 'IDEM' }, CREATE_KEY_OF_SESSION, ref.sessionId);
  if (task?.erase) {
    touched += await table.deletePaced(
      conversationKey(ref.tenantId, task.erase.conversationId).pk,
      conversationIdempotencyPrefix(task.erase),
    );
    // Only a tombstone goes: the condition, not this read, decides (a stray task never erases a live session).
    if (meta) touched += await deleteIf(table, metaKey(ref), ERASE_ONLY_DELETED);
  }
  return touched;
}

/** Deletes `key` under `condition` (`:sid` = the session id where it names one); 0 when the condition said no. */
async function deleteIf(table: Table, key: Key, condition: string, sessionId?: string): Promise<number> {
  try {
    await table.send('purge', () =>
      table.doc.send(
        new DeleteCommand({ TableName: table.name, Key: key, ...expression({ condition }, sessionId ? { ':sid': `"${sessionId}"` } : {}) }),
      ),
    );
    return 1;
  } catch (err) {
    if (isConditionFailure(err)) return 0;
    throw err;
  }
}
