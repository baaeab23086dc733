// The table's key schema and indexes, read from the one definition (infra/table-definition.json),
// so the capacity model charges exactly the indexes the deployed table has.
import { tableDefinition } from '../../infra/table.js';

export type Projection = 'KEYS_ONLY' | 'INCLUDE' | 'ALL';

export interface IndexModel {
  name: string;
  hash: string;
  range?: string;
  projection: Projection;
  /** Non-key attributes an INCLUDE index carries. */
  include: readonly string[];
}

export interface TableModel {
  hash: string;
  range?: string;
  indexes: readonly IndexModel[];
}

type KeyElement = { AttributeName: string; KeyType: string };

function keysOf(schema: readonly KeyElement[]): { hash: string; range?: string } {
  const hash = schema.find((k) => k.KeyType === 'HASH')?.AttributeName;
  if (!hash) throw new Error('key schema without a HASH key');
  const range = schema.find((k) => k.KeyType === 'RANGE')?.AttributeName;
  return range ? { hash, range } : { hash };
}

export function tableModel(def: typeof tableDefinition = tableDefinition): TableModel {
  return {
    ...keysOf(def.KeySchema),
    indexes: (def.GlobalSecondaryIndexes ?? []).map((g) => ({
      name: g.IndexName,
      ...keysOf(g.KeySchema),
      projection: g.Projection.ProjectionType as Projection,
      include: (g.Projection as { NonKeyAttributes?: string[] }).NonKeyAttributes ?? [],
    })),
  };
}

export function indexNamed(model: TableModel, name: string): IndexModel {
  const index = model.indexes.find((i) => i.name === name);
  if (!index) throw new Error(`no index ${name} in infra/table-definition.json`);
  return index;
}
