// `npm run example:agent`: the example agent against the stack `npm start` runs. The base URL
// comes from infra/local/.local-stack.json (or LINEAGE_BASE_URL); the API key from
// LINEAGE_API_KEY, or a new one is created for tenant "example-agent" the way
// `npm run cli -- keys create` does.
import { existsSync, readFileSync } from 'node:fs';
import { ApiKeyStore } from '../../lib/api/api-keys.js';
import { createDynamoClient } from '../../lib/aws-clients.js';
import { LineageClient } from '@session-lineage/client';
import { LOCAL_STACK_FILE, type LocalStackFile } from '../local/stack-file.js';
import { runExampleConversation } from './conversation.js';

const TENANT = 'example-agent';

function stackFile(): Partial<LocalStackFile> {
  return existsSync(LOCAL_STACK_FILE) ? (JSON.parse(readFileSync(LOCAL_STACK_FILE, 'utf8')) as LocalStackFile) : {};
}

async function apiKeyFor(file: Partial<LocalStackFile>): Promise<string> {
  if (process.env.LINEAGE_API_KEY) return process.env.LINEAGE_API_KEY;
  if (!file.dynamodbEndpoint || !file.tableName)
    throw new Error(`no API key: set LINEAGE_API_KEY, or run \`npm start\` first (it writes ${LOCAL_STACK_FILE})`);
  const ddb = createDynamoClient({ endpoint: file.dynamodbEndpoint, maxAttempts: 3 });
  try {
    return (await new ApiKeyStore({ client: ddb, tableName: file.tableName }).create(TENANT)).key;
  } finally {
    ddb.destroy();
  }
}

try {
  const file = stackFile();
  const baseUrl = process.env.LINEAGE_BASE_URL || file.baseUrl;
  if (!baseUrl) throw new Error(`no service: run \`npm start\` first (it writes ${LOCAL_STACK_FILE}) or set LINEAGE_BASE_URL`);
  const client = new LineageClient({ baseUrl, apiKey: await apiKeyFor(file) });
  console.log(`example agent against ${baseUrl}\n`);
  await runExampleConversation(client);
} catch (err) {
  console.error(`example:agent failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
