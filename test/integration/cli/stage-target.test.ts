// `--stage`: the table comes from the stack output LineageTableName, the Redis URLs from the SSM
// parameter the stack names (decrypted). CloudFormation and SSM are mocked; they point at the
// test stack, so the commands really run (DynamoDB Local through the DYNAMODB_ENDPOINT override).
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { cliInProcess } from '../../support/cli.js';
import { dynamoClient, makeStore, newSession } from '../lineage/support.js';

const cfn = mockClient(CloudFormationClient);
const ssm = mockClient(SSMClient);
const ddb = dynamoClient();
afterAll(() => {
  cfn.restore();
  ssm.restore();
  ddb.destroy();
});
afterEach(() => {
  cfn.reset();
  ssm.reset();
});

const PARAM = '/aws/reference/secretsmanager/session-lineage/prod/redis-urls';
/** A deployed operator's shell: credentials and a local DynamoDB endpoint override, no table or Redis URLs. */
const env = {
  LOCAL_STACK_FILE: '/nonexistent/stack.json',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT!,
};

function stack(name: string, outputs: Record<string, string>) {
  cfn.on(DescribeStacksCommand, { StackName: name }).resolves({
    Stacks: [
      {
        StackName: name,
        StackStatus: 'UPDATE_COMPLETE',
        CreationTime: new Date(),
        Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })),
      },
    ],
  });
}

describe('--stage target', () => {
  it('table from the stack output (env DYNAMODB_ENDPOINT still overrides, with a note); Redis URLs from the SSM parameter the stack names', async () => {
    stack('session-lineage-prod', { LineageTableName: process.env.TABLE_NAME!, RedisUrlsSsmParam: PARAM });
    ssm
      .on(GetParameterCommand, { Name: PARAM, WithDecryption: true })
      .resolves({ Parameter: { Name: PARAM, Type: 'String', Value: process.env.REDIS_URLS! } });
    const ref = await newSession(makeStore(ddb));

    const show = await cliInProcess(
      ['sessions', 'show', ref.sessionId, '--tenant', ref.tenantId, '--stage', 'prod', '--region', 'eu-west-1', '--json'],
      { env },
    );
    expect(show.code, show.stderr).toBe(0);
    expect((JSON.parse(show.stdout) as { session: { sessionId: string } }).session.sessionId).toBe(ref.sessionId);
    expect(show.stderr).toContain("note: DYNAMODB_ENDPOINT from the environment overrides the stage's DynamoDB endpoint");
    expect(cfn.commandCalls(DescribeStacksCommand).map((c) => c.args[0].input)).toEqual([{ StackName: 'session-lineage-prod' }]);

    const lease = await cliInProcess(
      ['lease', 'show', ref.sessionId, '--tenant', ref.tenantId, '--stage', 'prod', '--region', 'eu-west-1', '--json'],
      { env },
    );
    expect(lease.code, lease.stderr).toBe(0);
    expect((JSON.parse(lease.stdout) as { nodes: unknown[] }).nodes).toHaveLength(3);
    expect(ssm.commandCalls(GetParameterCommand).map((c) => c.args[0].input)).toEqual([{ Name: PARAM, WithDecryption: true }]);
  });

  it('--table wins over the stack; a stack without the parameter output falls back to /session-lineage/<stage>/redis-urls', async () => {
    stack('session-lineage-dev', {});
    ssm.on(GetParameterCommand).rejects(Object.assign(new Error('Parameter not found'), { name: 'ParameterNotFound' }));
    const keys = await cliInProcess(['keys', 'list', '--stage', 'dev', '--region', 'eu-west-1', '--table', process.env.TABLE_NAME!], {
      env,
    });
    expect(keys.code, keys.stderr).toBe(0);
    const lease = await cliInProcess(['lease', 'show', 's1', '--tenant', 't1', '--stage', 'dev', '--region', 'eu-west-1'], { env });
    expect(lease.code).toBe(1);
    expect(lease.stderr).toContain('SSM parameter /session-lineage/dev/redis-urls not found in eu-west-1');
  });

  it('a stage that does not exist: exit 1 naming the stack and region; no region at all: exit 2', async () => {
    cfn
      .on(DescribeStacksCommand)
      .rejects(Object.assign(new Error('Stack with id session-lineage-nope does not exist'), { name: 'ValidationError' }));
    const missing = await cliInProcess(['audit', 'forks', '--stage', 'nope', '--region', 'eu-west-1'], { env });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('stack session-lineage-nope not found in eu-west-1');
    const noRegion = await cliInProcess(['audit', 'forks', '--stage', 'nope'], { env });
    expect(noRegion.code).toBe(2);
    expect(noRegion.stderr).toContain('--stage needs a region');
  });
});
