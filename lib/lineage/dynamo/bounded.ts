// Bounded attempts (SPEC P6, issue 35): an attempt reads at most a budget of the oldest items, and
// a partial commit replaces exactly those rows with the summary, in place, in one transaction,
// leaving every later row where it is (docs/compaction.md "Long sessions").
//
// Why this shape: rows are keyed `MSG#<generation>#<lastSeq>`, and every read queries the active
// generation by seq range. A flip to a new generation has to copy every kept row (unbounded); a
// partial commit instead keeps the generation and reuses the part's sequence numbers: the summary's
// k items take seqs through-k+1..through, the part's other rows are deleted in the same
// transaction. Reads, pops, tails and appends are unchanged: the seqs stay ordered and unique, and
// nothing in the kept part moves. The part is bounded in bytes, tokens and in rows (its deletes
// share the one transaction, so at most PART_ENTRIES entries), whatever the session's length.
import type { SessionRef } from '../../session-ref.js';
import { FenceStaleError, ReplacementTooLongError, SessionEndedError, SessionNotFoundError, StaleSnapshotError } from '../errors.js';
import type { BegunAttempt, BoundedSnapshot, PartialCommitted, PartialCommitInput, SnapshotBound, TurnCredential } from '../types.js';
import { fencedByTurn, turnRefusal } from './turn-row.js';
import { ATTEMPT_ATTRS } from './attempts.js';
import { LIVE, OUR_ATTEMPT } from './conditions.js';
import { sessionPk } from './keys.js';
import { liveTipOf } from './links.js';
import { isConditionFailure } from './retry.js';
import { shrinkRow } from './row-removal.js';
import { encodeItems, packRows, rowItems, type StoredItem } from './rows.js';
import { itemOf, TRANSACTION_ENTRIES, type Table, type TransactItem } from './table.js';

/** Transaction entries the part's rows may take (heads, inline parts, chunk tasks); the rest is for the record, the summary and a held outcome. */
export const PART_ENTRIES = 80;

/**
 * Rows per Query page of a bounded read: a page holds at most 1 MB anyway (two or three full rows),
 * and DynamoDB Local reads every row a page may hold before it cuts the page at 1 MB.
 */
const PAGE_ROWS = 16;

/** What a bounded read found: the part's items with their rows (a partial commit deletes those rows). */
export interface BoundedPart {
  items: StoredItem[];
  snapshot: BoundedSnapshot;
}

/**
 * Items 1..`to` of `generation` up to the budget, cut at a row boundary (the first row whole, however large) where
 * `bound.cutOk` accepts the cut (a tool call is never parted from its result, A2). Reads at most
 * about maxBytes plus one Query page, whatever the session's length.
 */
export async function readBounded(table: Table, pk: string, generation: number, to: number, bound: SnapshotBound): Promise<BoundedPart> {
  // Each page asks for no more rows than a part may hold: a Query without a Limit makes DynamoDB
  // Local assemble the whole range first (seconds on a 200 MB session), and the part stops there anyway.
  const first = await table.queryRange(pk, generation, 1, to, { maxBytes: bound.maxBytes, pageRows: PAGE_ROWS, wholeFirstRow: true });
  const items = first.items;
  // Whole rows within the bytes, tokens and entries bounds.
  const rows: StoredItem[][] = [];
  let tokens = 0;
  let entries = 0;
  for (let i = 0; i < items.length;) {
    const row = items[i]!.row;
    let j = i;
    while (j < items.length && items[j]!.row.sk === row.sk) j++;
    const group = items.slice(i, j);
    i = j;
    if (group.length < row.count) break; // cut by maxBytes: the row is not whole
    const rowTokens = group.reduce((n, it) => n + it.tokens, 0);
    const rowEntries = 1 + row.partKeys.length + (row.w ? 1 : 0);
    if (rows.length > 0 && (tokens + rowTokens > bound.maxTokens || entries + rowEntries > PART_ENTRIES)) break;
    rows.push(group);
    tokens += rowTokens;
    entries += rowEntries;
  }
  let parsed = rows.map((g) => g.map(itemOf));
  const whole = !first.more && rows.reduce((n, g) => n + g.length, 0) === items.length;
  // A2: step back a row while the cut would part a call from its result; no acceptable cut: the first row.
  if (!whole && bound.cutOk) {
    let n = rows.length;
    while (n > 1 && !bound.cutOk(parsed.slice(0, n).flat())) n--;
    rows.length = n;
    parsed = parsed.slice(0, n);
  }
  const part = rows.flat();
  const through = part.at(-1)?.seq ?? 0;
  return {
    items: part,
    snapshot: {
      items: parsed.flat(),
      through,
      firstSeq: part[0]?.seq ?? 1,
      partial: !whole,
      tokens: part.reduce((n, it) => n + it.tokens, 0),
    },
  };
}

/**
 * P6 partial commit, in place: one transaction that checks the attempt is still ours and fresh
 * (L6, A6 stale mark, C4 live), deletes the part's rows, writes the summary under the part's last
 * sequence numbers and moves the record's counts by the difference (appends during the attempt
 * landed after the part and are untouched: I4). Returns the summary as written.
 */
export async function commitPartial(
  table: Table,
  ref: SessionRef,
  begun: BegunAttempt,
  part: readonly StoredItem[],
  input: PartialCommitInput,
): Promise<PartialCommitted> {
  const { attempt, session } = begun;
  const pk = sessionPk(ref);
  const k = input.compacted.length;
  const firstSeq = part[0]?.seq ?? 1;
  if (k === 0 || input.through - firstSeq + 1 < k) throw new ReplacementTooLongError(ref.sessionId, k, input.through - firstSeq + 1);
  const encoded = encodeItems(input.compacted, input.tokenEstimates);
  const rows = rowItems(pk, session.generation, input.through - k + 1, packRows(encoded), undefined, k);
  // Every row of the part goes; a summary row under the same key replaces it (one entry per key).
  const byKey = new Map<string, TransactItem>();
  const seen = new Set<string>();
  for (const it of part) {
    if (seen.has(it.row.sk)) continue;
    seen.add(it.row.sk);
    for (const entry of shrinkRow(table, it.row, it.row.count)) byKey.set(keyOf(entry), entry);
  }
  const stored = [...rows.heads, ...rows.parts];
  for (const row of stored) byKey.set(row.sk, table.put(row));
  const deletedRows = [...byKey.values()].filter((e) => e.Delete).length;
  const tokens = encoded.reduce((n, e) => n + e.tokens, 0);
  const partTokens = part.reduce((n, it) => n + it.tokens, 0);
  const at = table.isoNow();
  const update = table.metaUpdate(
    ref,
    {
      update:
        'SET #lastActivity = :mark, #partialThrough = :through, #partialBy = :aid ' +
        `ADD #messageCount :dCount, #tokenEstimate :dTok, #rows :dRows, #version :one REMOVE ${ATTEMPT_ATTRS}`,
      condition: `${LIVE} AND ${OUR_ATTEMPT} AND attribute_not_exists(#attempt.#stale)`,
    },
    {
      ':mark': { label: input.activityLabel, at },
      ':through': input.through,
      ':aid': attempt.attemptId,
      ':fence': attempt.fence,
      ':dCount': k - part.length,
      ':dTok': tokens - partTokens,
      ':dRows': stored.length - deletedRows,
      ':one': 1,
    },
  );
  const entries = [fencedByTurn(update, input.turn, table.now()), ...byKey.values(), ...(input.record ? [table.put(input.record)] : [])];
  if (entries.length > TRANSACTION_ENTRIES || rows.bytes > table.transactionBytes / 2)
    throw new Error(`a partial commit of ${entries.length} entries and ${rows.bytes} bytes does not fit one transaction`);
  try {
    await table.transact('commit partial', entries);
  } catch (err) {
    await explainFailure(table, ref, begun, err, input.turn);
  }
  const { attempt: _gone, ...before } = session;
  return {
    session: {
      ...before,
      messageCount: session.messageCount + k - part.length,
      tokenEstimate: session.tokenEstimate + tokens - partTokens,
      lastActivity: { label: input.activityLabel, at },
    },
    items: [...input.compacted],
    replaced: part.length,
    through: input.through,
  };
}

function keyOf(entry: TransactItem): string {
  const key = (entry.Delete?.Key ?? entry.Put?.Item ?? entry.Update?.Key) as { sk: string } | undefined;
  return key?.sk ?? '';
}

/** A refused partial commit as the typed refusal the phases map (C4 adopted, L6 lease_lost, A6 stale); a lost answer that landed is ours. */
async function explainFailure(table: Table, ref: SessionRef, begun: BegunAttempt, err: unknown, turn?: TurnCredential): Promise<void> {
  const { attempt } = begun;
  const meta = await table.getMeta(ref).catch(() => {
    throw err;
  });
  if (!meta || meta.deletedAt) throw new SessionNotFoundError(ref.sessionId);
  // A lost answer: the record says this attempt's partial commit landed.
  if ((meta as { partialBy?: string }).partialBy === attempt.attemptId && meta.attempt?.attemptId !== attempt.attemptId) return;
  if (!isConditionFailure(err)) throw err;
  // T3: the commit's turn is not current any more.
  const refusal = turn ? turnRefusal(meta, turn, table.now()) : null;
  if (refusal) throw refusal;
  if (meta.endedAt || meta.childSessionId) throw new SessionEndedError(ref.sessionId, await liveTipOf(table, meta));
  if (meta.fence !== attempt.fence || meta.attempt?.attemptId !== attempt.attemptId)
    throw new FenceStaleError(ref.sessionId, attempt.fence);
  // Our attempt, but a row of the part is gone or the stale mark is up: an item it read was removed (A6).
  throw new StaleSnapshotError(ref.sessionId);
}
