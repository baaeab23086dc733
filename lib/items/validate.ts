// TEMPORARY shim (replaced by the items branch at merge): item validation per format.
import type { Item, ItemFormat, ItemProblem } from './types.js';

const CHAT_ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

export function validateItems(format: ItemFormat, value: unknown): { ok: true; items: Item[] } | { ok: false; problem: ItemProblem } {
  if (!Array.isArray(value)) return { ok: false, problem: { index: -1, path: '', message: 'expected an array' } };
  for (const [index, item] of value.entries()) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return { ok: false, problem: { index, path: '', message: 'expected an object' } };
    const it = item as Record<string, unknown>;
    if (format === 'chat' && !CHAT_ROLES.has(it.role as string)) {
      return { ok: false, problem: { index, path: 'role', message: `unknown role ${JSON.stringify(it.role)}` } };
    }
    if (format === 'responses' && typeof it.type !== 'string' && typeof it.role !== 'string') {
      return { ok: false, problem: { index, path: 'type', message: 'expected a string' } };
    }
  }
  return { ok: true, items: value as Item[] };
}

export function describeProblem(p: ItemProblem): string {
  return `messages[${p.index}]${p.path ? `.${p.path}` : ''}: ${p.message}`;
}
