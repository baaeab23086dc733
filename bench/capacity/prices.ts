// On-demand request prices used for "cost per 1,000 compactions". These are the public list
// prices known when this was written, not fetched at run time: check the source before relying on them.
export const PRICES = {
  region: 'us-east-1',
  tableClass: 'DynamoDB Standard',
  mode: 'on-demand',
  /** USD per million write request units (1 WRU = one write of up to 1 KB; transactional: 2). */
  perMillionWriteUnits: 0.625,
  /** USD per million read request units (1 RRU = one strongly consistent read of up to 4 KB; eventual: 0.5; transactional: 2). */
  perMillionReadUnits: 0.125,
  inEffectSince: '2024-11-01',
  source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
  note: 'prices AWS published with its on-demand price reduction of November 2024; not re-checked when this bench ran, so they may have changed',
} as const;

/** Default on-demand throughput quota per table (Service Quotas; adjustable on request). */
export const TABLE_QUOTA = { readUnitsPerSecond: 40_000, writeUnitsPerSecond: 40_000 } as const;

export function costUsd(writeUnits: number, readUnits: number): number {
  return (writeUnits * PRICES.perMillionWriteUnits + readUnits * PRICES.perMillionReadUnits) / 1e6;
}
