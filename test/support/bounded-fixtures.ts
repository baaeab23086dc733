// Long sessions for the P6 tests (bounded attempts): numbered turns built in appends of a chosen
// size (the store packs one append's items into rows, and a part is cut at row boundaries), and a
// summarizing engine whose summaries say how many original items they cover, so the tests can
// check that every item is either kept verbatim or counted in exactly one summary.
import { randomUUID } from 'node:crypto';
import { SUMMARY_PREFIX, type Item } from '../../lib/items/types.js';
import type { DynamoLineageStore } from '../../lib/lineage/dynamo/store.js';
import { asIs } from '../../lib/lineage/prepare.js';
import type { SessionRef } from '../../lib/session-ref.js';
import { testEngine, type TestEngine } from './compaction-fixtures.js';

/** Turn `i` of a long session: alternating user/assistant, about `bytes` of JSON each. */
export function turn(i: number, bytes = 120): Item {
  const text = `turn ${i} `;
  return { role: i % 2 === 0 ? 'user' : 'assistant', content: text + 'x'.repeat(Math.max(0, bytes - text.length - 30)) };
}

/** A new session (fresh tenant) of `n` turns, appended `perAppend` at a time (each append packs its own rows). */
export async function longSession(
  store: DynamoLineageStore,
  n: number,
  opts: { perAppend?: number; bytes?: number; tenantId?: string } = {},
): Promise<SessionRef> {
  const per = opts.perAppend ?? 100;
  const r = await store.createSession({ tenantId: opts.tenantId ?? `t-${randomUUID()}`, source: 'test', format: 'chat' });
  if (r.replayed) throw new Error('unexpected replay');
  const ref = { tenantId: r.session.tenantId, sessionId: r.session.sessionId };
  for (let i = 0; i < n; i += per) {
    const items = Array.from({ length: Math.min(per, n - i) }, (_, k) => turn(i + k, opts.bytes));
    await store.appendItems(ref, { prepare: asIs(items) });
  }
  return ref;
}

const COVERS = /covers=(\d+)/;

/** How many original items `item` stands for: a counting summary its count, anything else 1. */
export function covered(item: Item): number {
  const m = typeof item.content === 'string' && item.content.startsWith(SUMMARY_PREFIX) ? COVERS.exec(item.content) : null;
  return m ? Number(m[1]) : 1;
}

/** Every original item, counted once: the session's items with summaries expanded to their counts. */
export function conserved(items: readonly Item[]): number {
  return items.reduce((n, it) => n + covered(it), 0);
}

/**
 * Summarizes its input into one assistant summary that covers all but the last user turn, which it
 * keeps verbatim (so the human anchor, C8, needs no restoring and the counts stay exact).
 */
export function countingEngine(): TestEngine {
  return testEngine((items) => {
    const lastUser = items.findLastIndex((it) => it.role === 'user' && covered(it) === 1);
    const rest = items.filter((_, i) => i !== lastUser);
    const summary: Item = { role: 'assistant', content: `${SUMMARY_PREFIX} covers=${conserved(rest)}` };
    return { items: lastUser >= 0 ? [summary, structuredClone(items[lastUser]!)] : [summary] };
  });
}
