// T2 rollback: supersede the current turn and remove what it appended, in ONE transaction (the
// record's update conditioned on the version and turn state read, plus the rows' deletes or
// shrinks), so an append of the old turn lands before it (and is removed) or is refused after.
// When a compaction happened since the turn began and it appended anything, the items may be
// summarized: 409 rollback_unavailable, nothing changed.
import type { SessionRef } from '../../session-ref.js';
import { RollbackUnavailableError } from '../turn-errors.js';
import type { StoredTurn } from './meta-row.js';
import { assertLive } from './links.js';
import { sessionPk } from './keys.js';
import { partsTask } from './parts.js';
import type { StoredItem } from './rows.js';
import { updateExpression } from './expression.js';
import { conditionFailedAt, oldImageOf, TRANSACTION_ENTRIES, type Table, type TransactItem } from './table.js';
import { EXISTS, LIVE, UNSEALED, turnStateCondition, versionCondition } from './conditions.js';
import { liveTurn, REWROTE_BEFORE_TURN } from './turn-row.js';

const MAX_ROUNDS = 20;

/** Returns the new turn's fence. `grant` is the turns' grant update (turns.ts), `grantValues` its constants. */
export async function rollbackTurn(
  table: Table,
  ref: SessionRef,
  stored: StoredTurn,
  conversationId: string,
  grant: string,
  grantValues: Record<string, unknown>,
): Promise<number> {
  const pk = sessionPk(ref);
  let meta = await assertLive(table, ref, await table.getMeta(ref));
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const now = table.now();
    const turn: StoredTurn = { ...stored, startedAt: now, expiresAt: now + (stored.expiresAt - stored.startedAt) };
    const appended = liveTurn(meta, now) ? (meta.turnAppended ?? 0) : 0;
    const rewrote = liveTurn(meta, now) !== undefined && meta.turnGen === REWROTE_BEFORE_TURN;
    // T2: a compaction summarized some of the turn: a new generation, or a partial commit (P6) past its start.
    const summarized = meta.turnGen !== meta.generation || (meta.partialThrough ?? 0) > (meta.turnFrom ?? meta.lastSeq);
    if (rewrote || (appended > 0 && summarized)) throw new RollbackUnavailableError(conversationId);
    const from = (meta.turnFrom ?? meta.lastSeq) + 1;
    const items = appended > 0 ? (await table.queryRange(pk, meta.generation, from, meta.lastSeq)).items : [];
    const removal = removalOf(table, items);
    if (removal.entries.length + 1 > TRANSACTION_ENTRIES) throw new RollbackUnavailableError(conversationId);
    const tokens = items.reduce((sum, it) => sum + it.tokens, 0);
    // A6: an in-flight attempt that read a removed item must not commit it back.
    const stale = meta.attempt !== undefined && items.some((it) => it.seq <= (meta.attempt!.watermark ?? 0));
    const update =
      `${grant}, #messageCount :minus, #tokenEstimate :tok, #version :one` +
      (removal.rowsGone && meta.rows !== undefined ? ', #rows :rowsGone' : '');
    const withStale = stale ? update.replace('SET ', 'SET #attempt.#stale = :true, ') : update;
    try {
      await table.transact('roll back turn', [
        table.metaUpdate(
          ref,
          {
            update: withStale,
            condition: `${LIVE} AND ${UNSEALED} AND ${versionCondition(meta)} AND ${turnStateCondition(meta)}${stale ? ' AND #attempt.#attemptId = :aid' : ''}`,
          },
          {
            ...grantValues,
            ':turn': turn,
            ':minus': -items.length,
            ':tok': -tokens,
            ':rowsGone': -removal.rowsGone,
            ':true': true,
            ':now': now,
            ':v': meta.version,
            ':turnSeq': meta.turnSeq ?? 0,
            ...(stale ? { ':aid': meta.attempt!.attemptId } : {}),
          },
        ),
        ...removal.entries,
      ]);
      table.records.drop(pk);
      return (meta.turnFence ?? 0) + 1;
    } catch (err) {
      if (conditionFailedAt(err, 0)) meta = await assertLive(table, ref, oldImageOf(err, 0));
      else if (conditionFailedAt(err, 1) || removal.entries.some((_e, i) => conditionFailedAt(err, i + 1))) {
        meta = await assertLive(table, ref, await table.getMeta(ref));
      } else throw err;
    }
  }
  // T2: the turn being rolled back kept writing faster than a round (each lost the version race):
  // refused, nothing changed, rather than a 503 that retrying would not cure; interrupt always lands.
  throw new RollbackUnavailableError(conversationId, 'the active turn kept appending while the rollback read what it wrote');
}

/**
 * The writes that take `items` (a suffix of the generation) away: a row wholly in it goes (with
 * its chunks), a row that straddles its start loses its last index entries (its bytes stay,
 * unread, as after a pop).
 */
function removalOf(table: Table, items: StoredItem[]): { entries: TransactItem[]; rowsGone: number } {
  const byRow = new Map<string, StoredItem[]>();
  for (const it of items) byRow.set(it.row.sk, [...(byRow.get(it.row.sk) ?? []), it]);
  const entries: TransactItem[] = [];
  let rowsGone = 0;
  for (const group of byRow.values()) {
    const row = group[0]!.row;
    const head = { pk: row.pk, sk: row.sk };
    if (group.length < row.count && row.idx !== undefined) {
      const idx = row.idx
        .split(',')
        .slice(0, row.count - group.length)
        .join(',');
      entries.push({
        Update: {
          TableName: table.name,
          Key: head,
          ...updateExpression({ update: 'SET #idx = :idx', condition: '#idx = :was' }, { ':idx': idx, ':was': row.idx }),
        },
      });
      continue;
    }
    rowsGone += 1 + row.partKeys.length;
    entries.push({ Delete: { TableName: table.name, Key: head, ConditionExpression: EXISTS } });
    for (const k of row.partKeys) entries.push({ Delete: { TableName: table.name, Key: { pk: row.pk, sk: k } } });
    if (row.w) entries.push(table.put(partsTask(table, row.pk, `${row.w}#${String(row.h ?? 0).padStart(4, '0')}`, table.now())));
  }
  return { entries, rowsGone };
}
