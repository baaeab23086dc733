// `dlq redrive` sends one StartMessageMoveTask from the after-turn DLQ to its queue: ARNs from the
// stage's stack outputs or from flags (AWS clients mocked; nothing leaves the process).
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { SQSClient, StartMessageMoveTaskCommand } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { cliInProcess } from '../../support/cli.js';

const cfn = mockClient(CloudFormationClient);
const sqs = mockClient(SQSClient);
afterEach(() => {
  cfn.reset();
  sqs.reset();
});

const DLQ = 'arn:aws:sqs:eu-west-1:123456789012:session-lineage-prod-AfterTurnDeadLetterQueue-AbC123';
const QUEUE = 'arn:aws:sqs:eu-west-1:123456789012:session-lineage-prod-AfterTurnQueue-XyZ789';
const env = { LOCAL_STACK_FILE: '/nonexistent/stack.json', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'x' };

function stack(outputs: Record<string, string>) {
  cfn.on(DescribeStacksCommand, { StackName: 'session-lineage-prod' }).resolves({
    Stacks: [
      {
        StackName: 'session-lineage-prod',
        StackStatus: 'UPDATE_COMPLETE',
        CreationTime: new Date(),
        Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })),
      },
    ],
  });
}

describe('dlq redrive', () => {
  it('--stage: the queue ARNs come from the stack outputs; one move task from the DLQ back to the queue', async () => {
    stack({ LineageTableName: 't', AfterTurnDeadLetterQueueArn: DLQ, AfterTurnQueueArn: QUEUE });
    sqs.on(StartMessageMoveTaskCommand).resolves({ TaskHandle: 'task-handle-1' });
    const run = await cliInProcess(['dlq', 'redrive', '--stage', 'prod', '--region', 'eu-west-1', '--json'], { env });
    expect(run.code, run.stderr).toBe(0);
    expect(cfn.commandCalls(DescribeStacksCommand)).toHaveLength(1);
    const calls = sqs.commandCalls(StartMessageMoveTaskCommand);
    expect(calls.map((c) => c.args[0].input)).toEqual([{ SourceArn: DLQ, DestinationArn: QUEUE }]);
    expect(await (calls[0]!.thisValue as SQSClient).config.region()).toBe('eu-west-1');
    expect(JSON.parse(run.stdout)).toEqual({ taskHandle: 'task-handle-1', sourceArn: DLQ, destinationArn: QUEUE });
  });

  it("explicit ARNs: no stack lookup, the queues' region, and the rate limit passed on", async () => {
    sqs.on(StartMessageMoveTaskCommand).resolves({ TaskHandle: 'task-handle-2' });
    const dlq = DLQ.replace('eu-west-1', 'us-west-2');
    const queue = QUEUE.replace('eu-west-1', 'us-west-2');
    const run = await cliInProcess(['dlq', 'redrive', '--dlq-arn', dlq, '--queue-arn', queue, '--max-per-second', '10'], { env });
    expect(run.code, run.stderr).toBe(0);
    expect(cfn.calls()).toHaveLength(0);
    const calls = sqs.commandCalls(StartMessageMoveTaskCommand);
    expect(calls.map((c) => c.args[0].input)).toEqual([{ SourceArn: dlq, DestinationArn: queue, MaxNumberOfMessagesPerSecond: 10 }]);
    expect(await (calls[0]!.thisValue as SQSClient).config.region()).toBe('us-west-2');
    expect(run.stdout).toContain(`started moving messages from ${dlq} to ${queue} (task task-handle-2)`);
  });

  it('locally: exit 1 with a clear message, and nothing is sent', async () => {
    const run = await cliInProcess(['dlq', 'redrive'], { env });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'dlq redrive works on a deployed stage only: the local stack (serverless-offline) has no after-turn queue or DLQ',
    );
    expect(sqs.calls()).toHaveLength(0);
  });

  it('a stack without the ARN outputs: exit 1 naming the flags; bad flags: exit 2', async () => {
    stack({ LineageTableName: 't' });
    const old = await cliInProcess(['dlq', 'redrive', '--stage', 'prod', '--region', 'eu-west-1'], { env });
    expect(old.code).toBe(1);
    expect(old.stderr).toContain('stack session-lineage-prod has no AfterTurnDeadLetterQueueArn output');
    expect(old.stderr).toContain('--dlq-arn and --queue-arn');
    for (const args of [
      ['--dlq-arn', DLQ],
      ['--dlq-arn', 'not-an-arn', '--queue-arn', QUEUE],
      ['--stage', 'prod', '--region', 'eu-west-1', '--max-per-second', '0'],
      ['--stage', 'prod'],
    ]) {
      expect((await cliInProcess(['dlq', 'redrive', ...args], { env })).code, args.join(' ')).toBe(2);
    }
    expect(sqs.calls()).toHaveLength(0);
  });
});
