// H5 import: a conversation restored from its export into a new id, so that its export deep-equals
// the original but for the ids. Written like a big append (A7): every item row and replacement
// marker first, under session keys nobody reads yet (no record names them), each session's rows
// listed beforehand in a parts task (so the sweep removes them if the import never lands); then one
// transaction creates the conversation record (only if the id is free), every session record
// (rotated ones ended, linked parent to child, with the GSI keys a rotation writes) and the
// Idempotency-Key record, and takes the tasks away.
import { randomUUID } from 'node:crypto';
import { ServiceError } from '../../errors.js';
import { ImportTargetExistsError, type ImportGeneration, type ImportInput, type ImportResult } from '../history.js';
import { conversationIdempotencyKey, conversationItemFor, conversationKey, type ConversationItem } from './conversation-row.js';
import { idempotencyRecord, liveRecord, replay, type IdempotencyRecord } from './idempotency.js';
import { metaKey, replacedMarkerSk, rotationShardOf, sessionPk } from './keys.js';
import type { MetaItem } from './meta-row.js';
import { PARTS_GRACE_MS, partsTask, partsTaskCheck, runPartsTask } from './parts.js';
import { conditionFailedAt, TRANSACTION_ENTRIES, withoutUndefined, type Table } from './table.js';
import { rowItems, packRows, type Encoded, type RawRow } from './rows.js';

/** Entries the transaction keeps for the conversation record and the key; two per session (record, task). */
const MAX_SESSIONS = Math.floor((TRANSACTION_ENTRIES - 2) / 2);

export class ImportTooLargeError extends ServiceError {
  override readonly name = 'ImportTooLargeError';
  constructor(sessions: number) {
    super(`an import of ${sessions} sessions does not fit one transaction; at most ${MAX_SESSIONS}`, {
      status: 413,
      code: 'payload_too_large',
    });
  }
}

/** One generation's rows: a new row starts where seqs jump and where flagged (summary) items start, so each row's flagged items lead it (`cmp`). */
function generationRows(pk: string, g: ImportGeneration): RawRow[] {
  const rows: RawRow[] = [];
  let run: ImportGeneration['items'] = [];
  const flush = () => {
    if (run.length === 0) return;
    const encoded: Encoded[] = run.map((it) => {
      const body = JSON.stringify(it.item);
      return { body, bytes: Buffer.byteLength(body, 'utf8'), tokens: it.tokens };
    });
    const flagged = run.filter((it) => it.summary).length;
    const r = rowItems(pk, g.generation, run[0]!.seq, packRows(encoded), undefined, flagged);
    rows.push(...r.heads, ...r.parts);
    run = [];
  };
  for (const it of g.items) {
    const prev = run.at(-1);
    if (prev && (it.seq !== prev.seq + 1 || (it.summary && !prev.summary))) flush();
    run.push(it);
  }
  flush();
  return rows;
}

export async function importConversation(table: Table, input: ImportInput, idempotencyTtlSeconds: number): Promise<ImportResult> {
  const { tenantId } = input;
  if (input.sessions.length > MAX_SESSIONS) throw new ImportTooLargeError(input.sessions.length);
  const at = table.isoNow();
  const live = input.sessions.at(-1)!;
  const root = input.sessions[0]!;
  const metadataJson = input.metadata === undefined ? undefined : JSON.stringify(input.metadata);
  const written: { pk: string; scope: string; keys: string[] }[] = [];
  const metas: MetaItem[] = [];
  for (const [i, s] of input.sessions.entries()) {
    const ref = { tenantId, sessionId: s.sessionId };
    const pk = sessionPk(ref);
    const last = s.generations.at(-1);
    const rows: RawRow[] = [];
    for (const g of s.generations) {
      rows.push(...generationRows(pk, g));
      if (g !== last)
        rows.push({ pk, sk: replacedMarkerSk(g.generation), generation: g.generation, compactedAt: g.compactedAt ?? at } as RawRow);
    }
    const liveRows = last ? generationRows(pk, last).length : 0;
    const parent = input.sessions[i - 1];
    const child = input.sessions[i + 1];
    const maxGen = Math.max(0, ...s.generations.map((g) => g.generation));
    metas.push(
      withoutUndefined({
        ...metaKey(ref),
        tenantId,
        sessionId: s.sessionId,
        conversationId: input.conversationId,
        format: input.format,
        source: input.source,
        metadataJson,
        createdAt: s.createdAt,
        parentSessionId: parent?.sessionId,
        rootSessionId: i > 0 ? root.sessionId : undefined,
        parentKey: parent ? sessionPk({ tenantId, sessionId: parent.sessionId }) : undefined,
        rotationShard: parent ? rotationShardOf(pk, table.rotationShards) : undefined,
        createdByAttempt: parent ? randomUUID() : undefined,
        childSessionId: child?.sessionId,
        tipSessionId: i === 0 && child ? live.sessionId : child?.sessionId,
        endedAt: child ? (s.endedAt ?? at) : undefined,
        endReason: child ? (s.endReason ?? 'compression') : undefined,
        generation: last?.generation ?? 0,
        fenceCounter: maxGen,
        messageCount: last?.items.length ?? 0,
        lastSeq: last?.items.at(-1)?.seq ?? 0,
        tokenEstimate: (last?.items ?? []).reduce((n, it) => n + it.tokens, 0),
        rows: liveRows,
        lastActivity: s.lastActivity,
        version: 1,
        compactionPolicy: input.compactionPolicy,
        turnPolicy: input.turnPolicy,
      }),
    );
    if (rows.length > 0) {
      const scope = randomUUID();
      const keys = rows.map((r) => r.sk);
      // Listed before they are written (A7, S2): whatever happens next, the task names them.
      await table.putAll([partsTask(table, pk, scope, table.now() + PARTS_GRACE_MS, keys)]);
      written.push({ pk, scope, keys });
      await table.putAll(rows);
    }
  }
  const conv: ConversationItem = {
    ...conversationItemFor({ ...metas[0]!, metadataJson }, input.conversationId),
    liveSessionId: live.sessionId,
    sessions: input.sessions.length,
    createdAt: input.createdAt,
    updatedAt: input.updatedAt,
    activeAt: input.activeAt,
    ...(input.retention?.archivedSeconds !== undefined ? { archivedSeconds: input.retention.archivedSeconds } : {}),
    ...(input.retention?.endedSessionSeconds !== undefined ? { endedSessionSeconds: input.retention.endedSessionSeconds } : {}),
  };
  const scope = { conversationId: input.conversationId, rootSessionId: root.sessionId };
  const record = input.idempotency
    ? idempotencyRecord(
        conversationIdempotencyKey(tenantId, scope, input.idempotency.key),
        input.idempotency,
        input.respond(),
        table.now(),
        idempotencyTtlSeconds,
      )
    : undefined;
  try {
    await table.transact('import conversation', [
      table.put(conv, 'attribute_not_exists(pk)'),
      // New random ids: nothing to collide with (the conversation record's condition is what decides).
      ...metas.map((m) => table.put(m)),
      ...written.map((w) => partsTaskCheck(table, w.pk, w.scope)),
      ...(record ? [table.put(record)] : []),
    ]);
    return { replayed: false };
  } catch (err) {
    await Promise.all(written.map((w) => runPartsTask(table, w.pk, w.scope))).catch((e: unknown) =>
      table.warn('removing an import that did not land failed; the sweep will', e),
    );
    if (!conditionFailedAt(err, 0)) throw err;
    return { replayed: true, response: await replayOrRefuse(table, input) };
  }
}

/** The id is taken: by this very import (its key's record says so: replay), or by another conversation (409). */
async function replayOrRefuse(table: Table, input: ImportInput) {
  const existing = await table.getItem<ConversationItem>(conversationKey(input.tenantId, input.conversationId));
  if (existing && input.idempotency) {
    const key = conversationIdempotencyKey(
      input.tenantId,
      { conversationId: input.conversationId, rootSessionId: existing.rootSessionId },
      input.idempotency.key,
    );
    const found = liveRecord(await table.getItem<IdempotencyRecord>(key), table.now());
    if (found) return replay(found, input.idempotency);
  }
  throw new ImportTargetExistsError(input.conversationId);
}
