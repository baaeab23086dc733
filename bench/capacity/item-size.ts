// DynamoDB's item size rules over the wire format (AttributeValue maps), as published in
// "Item sizes and formats" (Developer Guide): names and strings count their UTF-8 bytes, a
// number ~1 byte per 2 significant digits + 1, binary its bytes, null/boolean 1 byte, a list or
// map 3 bytes plus 1 byte per element plus the elements, sets the sum of their elements.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { IndexModel, TableModel } from './table-model.js';

export type WireItem = Record<string, AttributeValue>;

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

export function numberSize(n: string): number {
  const digits = n.replace(/^[-+]/, '').replace(/e.*$/i, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

export function valueSize(v: AttributeValue): number {
  if (v.S !== undefined) return utf8(v.S);
  if (v.N !== undefined) return numberSize(v.N);
  if (v.B !== undefined) return v.B.byteLength;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS !== undefined) return v.SS.reduce((s, x) => s + utf8(x), 0);
  if (v.NS !== undefined) return v.NS.reduce((s, x) => s + numberSize(x), 0);
  if (v.BS !== undefined) return v.BS.reduce((s, x) => s + x.byteLength, 0);
  if (v.L !== undefined) return 3 + v.L.reduce((s, x) => s + 1 + valueSize(x), 0);
  if (v.M !== undefined) return 3 + Object.entries(v.M).reduce((s, [k, x]) => s + 1 + utf8(k) + valueSize(x), 0);
  return 0;
}

export function itemSize(item: WireItem | undefined): number {
  if (!item) return 0;
  return Object.entries(item).reduce((s, [name, v]) => s + utf8(name) + valueSize(v), 0);
}

/** The entry `item` has in `index`: undefined when the item lacks an index key (sparse indexes). */
export function indexEntry(item: WireItem | undefined, index: IndexModel, table: TableModel): WireItem | undefined {
  if (!item || item[index.hash] === undefined || (index.range && item[index.range] === undefined)) return undefined;
  if (index.projection === 'ALL') return item;
  const names = new Set([table.hash, table.range, index.hash, index.range, ...(index.projection === 'INCLUDE' ? index.include : [])]);
  return Object.fromEntries(Object.entries(item).filter(([k]) => names.has(k)));
}

/** A stable text for an attribute value (partition values, equality of index entries). */
export function valueText(v: AttributeValue | undefined): string {
  if (!v) return '';
  if (v.S !== undefined) return v.S;
  if (v.N !== undefined) return v.N;
  return JSON.stringify(v, (_k, x: unknown) => (x instanceof Uint8Array ? Buffer.from(x).toString('base64') : x));
}

export function sameEntry(a: WireItem, b: WireItem): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && valueText(a[k]) === valueText(b[k]));
}
