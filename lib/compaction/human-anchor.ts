// TEMPORARY shim (replaced by the items branch at merge). Human anchor (SPEC C8).
import type { FormatAdapter, Item } from '../items/types.js';

export function restoreHumanAnchor(compacted: readonly Item[], input: readonly Item[], adapter: FormatAdapter): { items: Item[]; restored: 'none' | 'inserted' | 'merged' } {
  const out = compacted.map((m) => ({ ...m }));
  if (out.some((m) => adapter.isHumanTurn(m))) return { items: out, restored: 'none' };
  const anchor = [...input].reverse().find((m) => adapter.isHumanTurn(m));
  if (!anchor) return { items: out, restored: 'none' };
  const at = out.findLastIndex((m) => adapter.isInstruction(m) || adapter.isSummary(m)) + 1;
  if (out[at - 1]?.role !== 'user' && out[at]?.role !== 'user') {
    out.splice(at, 0, { ...anchor });
    return { items: out, restored: 'inserted' };
  }
  const target = out[at]?.role === 'user' ? at : at - 1;
  out[target] = adapter.mergeHumanText(out[target]!, anchor);
  return { items: out, restored: 'merged' };
}
