// A table of the shared definition just for one test file (the sweep scans whole tables).
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ensureTable } from '../../../infra/table.js';

export async function infraTable(client: DynamoDBClient, purpose: string): Promise<string> {
  const name = `${purpose}-${randomUUID().slice(0, 8)}`;
  await ensureTable(client, name);
  return name;
}
