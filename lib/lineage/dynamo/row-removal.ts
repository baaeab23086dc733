// Taking a row's last items away (SPEC A6 pop, X1 replace_suffix): the transaction entries for it.
import { EXISTS } from './conditions.js';
import { updateExpression } from './expression.js';
import { PARTS_GRACE_MS, partsTask } from './parts.js';
import type { RowRef } from './rows.js';
import type { Table, TransactItem } from './table.js';

/**
 * The writes that take a row's last `n` items away: a row losing all of them goes (with its
 * chunks; chunks written ahead of a commit go through the sweep's task, due only once a reader that
 * saw the head before the removal has surely read them: a longest invocation); a packed row keeping
 * some loses its last index entries (its bytes stay, unread, so the row is not rewritten).
 */
export function shrinkRow(table: Table, row: RowRef, n = 1): TransactItem[] {
  const head = { pk: row.pk, sk: row.sk };
  if (row.count > n && row.idx !== undefined) {
    const idx = row.idx
      .split(',')
      .slice(0, row.count - n)
      .join(',');
    return [
      {
        Update: {
          TableName: table.name,
          Key: head,
          ...updateExpression({ update: 'SET #idx = :idx', condition: '#idx = :was' }, { ':idx': idx, ':was': row.idx }),
        },
      },
    ];
  }
  return [
    { Delete: { TableName: table.name, Key: head, ConditionExpression: EXISTS } },
    ...row.partKeys.map((Key) => ({ Delete: { TableName: table.name, Key: { pk: row.pk, sk: Key } } })),
    ...(row.w
      ? [table.put(partsTask(table, row.pk, `${row.w}#${String(row.h ?? 0).padStart(4, '0')}`, table.now() + PARTS_GRACE_MS))]
      : []),
  ];
}

/** Rows (heads and inline parts) the record stops counting when `n` items leave `row` (records older than packing count none). */
export function rowsGone(counted: boolean, row: RowRef, n = 1): number {
  return counted && row.count <= n ? 1 + row.partKeys.length : 0;
}
