// The one table definition (infra/table-definition.json, CloudFormation shape) turned
// into DynamoDB API calls for the local stack and tests. serverless.yml reads the same JSON.
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import definition from './table-definition.json' with { type: 'json' };

export const tableDefinition = definition;

export function createTableInput(tableName: string): CreateTableCommandInput {
  const { TimeToLiveSpecification: _ttl, ...rest } = definition;
  return { TableName: tableName, ...(rest as Omit<CreateTableCommandInput, 'TableName'>) };
}

/** Creates the table (and enables TTL) unless it already exists. */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new CreateTableCommand(createTableInput(tableName)));
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err;
  }
  for (;;) {
    const d = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (d.Table?.TableStatus === 'ACTIVE') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await client
    .send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: definition.TimeToLiveSpecification,
      }),
    )
    .catch((err: unknown) => {
      // Enabling TTL twice is refused with "TimeToLive is already enabled"; that is the state we want.
      if (!(err instanceof Error && /already enabled/i.test(err.message))) throw err;
    });
}
