// SPEC H1 for bounded (P6) compactions: a partial commit's summary is flagged at its place in the
// history, and the items after the part, which it leaves where they are, are not.
import { describe, expect, it } from 'vitest';
import { compactSession } from '../../../lib/compaction/index.js';
import type { HistoryEntry } from '../../../lib/lineage/history.js';
import type { AttemptBudget } from '../../../lib/lineage/types.js';
import { countingEngine, longSession } from '../../support/bounded-fixtures.js';
import { contendersForSuite, depsOn, type Contender } from '../../support/compaction-fixtures.js';

const [c] = contendersForSuite(1) as [Contender];
const BUDGET: AttemptBudget = { maxBytes: 25_000, maxTokens: 1_000_000 };

describe('history of bounded compactions (H1, P6)', () => {
  it('H1: a partial commit flags its summary at its place; the later items it left in place are not flagged', async () => {
    const ref = await longSession(c.store, 600);
    const out = await compactSession(depsOn(c, { engine: countingEngine(), attemptBudget: BUDGET }), {
      ref,
      mode: 'in_place',
      origin: 'manual',
      holder: 'h1',
    });
    expect(out).toMatchObject({ outcome: 'compressed', partial: true });
    if (out.outcome !== 'compressed' || !out.partial) throw new Error('expected a partial compression with its summary');
    const entries: HistoryEntry[] = [];
    let from;
    for (;;) {
      const page = await c.store.readSessionHistory(ref, { limit: 1000, maxBytes: 4_000_000, ...(from ? { from } : {}) });
      entries.push(...page.entries);
      if (!page.next) break;
      from = page.next;
    }
    const live = await c.store.readAll(ref);
    expect(entries.map((e) => e.item)).toEqual(live);
    const flagged = entries.filter((e) => e.summary);
    expect(flagged.map((e) => e.item)).toEqual(out.items);
    // The summary leads (it took the part's last seqs); everything after it is the untouched original.
    expect(entries.slice(0, flagged.length)).toEqual(flagged);
    expect(entries.slice(flagged.length).every((e) => e.summary === undefined && e.compactedAt === undefined)).toBe(true);
  });
});
