// A table of the shared definition just for one test file (the sweep scans whole tables).
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ensureTable } from '../../../infra/table.js';
import { createDynamoClient } from '../../../lib/aws-clients.js';
import { DynamoLineageStore } from '../../../lib/lineage/dynamo/store.js';

export async function infraTable(client: DynamoDBClient, purpose: string): Promise<string> {
  const name = `${purpose}-${randomUUID().slice(0, 8)}`;
  await ensureTable(client, name);
  return name;
}

export interface StoreOnOwnTable {
  ddb: DynamoDBClient;
  tableName: string;
  store: DynamoLineageStore;
}

/** A DynamoDB Local client, a fresh table for `purpose` and a lineage store on it. The caller destroys `ddb`. */
export async function storeOnOwnTable(purpose: string): Promise<StoreOnOwnTable> {
  const ddb = createDynamoClient({ endpoint: process.env.DYNAMODB_ENDPOINT, maxAttempts: 3 });
  try {
    const tableName = await infraTable(ddb, purpose);
    return { ddb, tableName, store: new DynamoLineageStore({ client: ddb, tableName }) };
  } catch (err) {
    ddb.destroy();
    throw err;
  }
}
