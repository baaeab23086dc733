// TEMPORARY shim (replaced by the items branch at merge): the adapter lookup of the item model.
import type { FormatAdapter, Item, ItemFormat, ItemRole, ToolCallRef } from './types.js';
import { SUMMARY_PREFIX } from './types.js';

export * from './types.js';

function text(item: Item): string {
  const c = item.content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => (p && typeof p === 'object' && !Array.isArray(p) && typeof p.text === 'string' ? p.text : '')).join('');
  return '';
}

const base = (format: ItemFormat): FormatAdapter => ({
  format,
  roleOf: (item) => (typeof item.role === 'string' ? (item.role as ItemRole) : undefined),
  isInstruction: (item) => item.role === 'system' || item.role === 'developer',
  isHumanTurn: (item) => item.role === 'user' && item.synthetic !== true && !text(item).startsWith(SUMMARY_PREFIX),
  isSummary: (item) => text(item).trimStart().startsWith(SUMMARY_PREFIX),
  textOf: text,
  toolCallsOf: (): ToolCallRef[] => [],
  toolResultIdOf: () => undefined,
  summaryItem: (t) => (format === 'chat' ? { role: 'assistant', content: t } : { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: t }] }),
  mergeHumanText: (into, anchor) => { const { synthetic: _s, ...rest } = into; return { ...rest, role: "user", content: `${text(anchor)}\n\n${text(into)}` }; },
  render: (item) => `${String(item.role ?? item.type)}: ${text(item)}`,
});

export function adapterFor(format: ItemFormat): FormatAdapter {
  return base(format);
}
