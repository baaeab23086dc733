// What one request costs under DynamoDB's published capacity rules, computed from the real
// item images (DynamoDB Local's ConsumedCapacity is not reliable):
// - writes: 1 WCU per started KB of the larger of the before/after images, per item; a failed
//   condition still costs the write; transactional entries cost 2x;
// - each GSI an item enters, leaves or changes in costs its own WCU on the index entry's size
//   (keys + projected attributes): enter = put, leave = delete, index key changed = delete + put,
//   only projected attributes changed = 1 write, nothing projected changed = free (GSI.html#GSI.Writes);
//   index writes caused by a transactional entry are counted at 2x too (conservative: AWS does
//   not document a multiplier for index propagation);
// - reads: 1 RCU per started 4 KB strongly consistent, half eventually consistent (GSIs always
//   are); GetItem and BatchGetItem round per item, Query and Scan round the sum of the items
//   they read; a read that finds nothing still costs the minimum; transactional reads 2x.
import { indexEntry, itemSize, sameEntry, valueText, type WireItem } from './item-size.js';
import type { TableModel } from './table-model.js';

export const WRITE_UNIT_BYTES = 1024;
export const READ_UNIT_BYTES = 4096;
/** Per partition key value, GSIs included (the and AWS's per-partition limits). */
export const PARTITION_WCU = 1000;
export const PARTITION_RCU = 3000;

export interface Charge {
  /** 'table' or an index name. */
  target: string;
  /** The partition key value the charge lands on. */
  partition: string;
  wcu: number;
  rcu: number;
  /** Bytes of the item images the charge covers (the larger image for writes, the items read for reads). */
  bytes: number;
  kind: 'put' | 'update' | 'delete' | 'check' | 'index put' | 'index delete' | 'index update' | 'get' | 'query' | 'scan';
}

/** A partition's use as a share of its per-second limits: the one closer to 1 decides. */
export function load(u: { wcu: number; rcu: number }): number {
  return Math.max(u.wcu / PARTITION_WCU, u.rcu / PARTITION_RCU);
}

export type WriteKind = 'put' | 'update' | 'delete' | 'check';

export function writeUnits(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / WRITE_UNIT_BYTES));
}

export function readUnits(bytes: number, consistent: boolean): number {
  return Math.max(1, Math.ceil(bytes / READ_UNIT_BYTES)) * (consistent ? 1 : 0.5);
}

/** Table and index charges of one written item; `after` equals `before` when the write did not apply. */
export function chargeWrite(
  model: TableModel,
  kind: WriteKind,
  partition: string,
  before: WireItem | undefined,
  after: WireItem | undefined,
  transactional: boolean,
): Charge[] {
  const x = transactional ? 2 : 1;
  const bytes = kind === 'delete' || kind === 'check' ? itemSize(before) : Math.max(itemSize(before), itemSize(after));
  const charges: Charge[] = [{ target: 'table', partition, wcu: writeUnits(bytes) * x, rcu: 0, bytes, kind }];
  for (const index of model.indexes) {
    const old = indexEntry(before, index, model);
    const now = indexEntry(after, index, model);
    const at = (e: WireItem) => valueText(e[index.hash]);
    const charge = (e: WireItem, k: Charge['kind']): Charge => ({
      target: index.name,
      partition: at(e),
      wcu: writeUnits(itemSize(e)) * x,
      rcu: 0,
      bytes: itemSize(e),
      kind: k,
    });
    if (old && now) {
      const keyMoved = at(old) !== at(now) || (index.range !== undefined && valueText(old[index.range]) !== valueText(now[index.range]));
      if (keyMoved) charges.push(charge(old, 'index delete'), charge(now, 'index put'));
      else if (!sameEntry(old, now))
        charges.push({ ...charge(now, 'index update'), wcu: writeUnits(Math.max(itemSize(old), itemSize(now))) * x });
    } else if (old) charges.push(charge(old, 'index delete'));
    else if (now) charges.push(charge(now, 'index put'));
  }
  return charges;
}

/** One read: the items it read (full images: a projection does not make a read cheaper). */
export function chargeRead(
  kind: 'get' | 'query' | 'scan',
  target: string,
  partition: string,
  items: readonly (WireItem | undefined)[],
  consistent: boolean,
  transactional = false,
): Charge {
  const bytes = items.reduce((s, it) => s + itemSize(it), 0);
  return { target, partition, wcu: 0, rcu: readUnits(bytes, consistent && target === 'table') * (transactional ? 2 : 1), bytes, kind };
}
