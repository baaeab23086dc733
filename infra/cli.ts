// Operator CLI. `npm run cli -- keys create --tenant <name>` creates an API key and prints
// it alone on the last line. Endpoints come from the file `npm start` writes
// (infra/local/.local-stack.json); DYNAMODB_ENDPOINT / TABLE_NAME / AWS_REGION override it.
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ApiKeyStore } from '../lib/api/api-keys.js';
import { createDynamoClient } from '../lib/clients.js';
import { LOCAL_STACK_FILE, type LocalStackFile } from './local/stack-file.js';

const usage = `usage:
  npm run cli -- keys create --tenant <name>   create an API key for a tenant (printed alone on the last line)

environment (overrides ${LOCAL_STACK_FILE}): DYNAMODB_ENDPOINT, TABLE_NAME, AWS_REGION`;

function fail(message: string): never {
  console.error(message);
  console.error(usage);
  process.exit(2);
}

function target(): { endpoint: string | undefined; tableName: string; region: string } {
  const file: Partial<LocalStackFile> = existsSync(LOCAL_STACK_FILE) ? (JSON.parse(readFileSync(LOCAL_STACK_FILE, 'utf8')) as LocalStackFile) : {};
  // With TABLE_NAME set but no endpoint, the target is the real AWS table, not the local file's.
  const useFile = !process.env.TABLE_NAME || process.env.DYNAMODB_ENDPOINT !== undefined;
  const endpoint = process.env.DYNAMODB_ENDPOINT || (useFile ? file.dynamodbEndpoint : undefined);
  const tableName = process.env.TABLE_NAME || file.tableName;
  if (!tableName) fail(`no table: run \`npm start\` first (it writes ${LOCAL_STACK_FILE}) or set TABLE_NAME`);
  return { endpoint, tableName, region: process.env.AWS_REGION || 'us-east-1' };
}

async function keysCreate(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { tenant: { type: 'string' } }, strict: true });
  if (!values.tenant) fail('--tenant is required');
  const { endpoint, tableName, region } = target();
  const client = createDynamoClient({ endpoint, region, maxAttempts: 3 });
  try {
    const { key } = await new ApiKeyStore({ client, tableName }).create(values.tenant);
    console.log(`# API key for tenant ${values.tenant} (table ${tableName}${endpoint ? ` at ${endpoint}` : ''}); it is shown only once:`);
    console.log(key);
  } finally {
    client.destroy();
  }
}

const [group, command, ...rest] = process.argv.slice(2);
try {
  if (group === 'keys' && command === 'create') await keysCreate(rest);
  else fail(group ? `unknown command: ${[group, command].filter(Boolean).join(' ')}` : 'no command given');
} catch (err) {
  console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
