// `dlq redrive`: moves the after-turn events that failed 5 deliveries from the DLQ back to the
// queue (an SQS message move task, run by SQS itself; the consumer is idempotent per message).
// Deployed stages only: under serverless-offline after-turn events invoke the function
// directly, so there is no queue and no DLQ.
import { StartMessageMoveTaskCommand } from '@aws-sdk/client-sqs';
import { createSqsClient } from '../../../lib/aws-clients.js';
import { parseCommand } from '../args.js';
import type { Command } from '../command.js';
import { CliError, EXIT_OK, UsageError } from '../errors.js';
import { emit } from '../output.js';
import { stackNameOf, withTarget, type Target } from '../target.js';

const USAGE = 'dlq redrive --stage <s> [--region <r>] [--dlq-arn <arn> --queue-arn <arn>] [--max-per-second <n>] [--json]';
const SQS_ARN = /^arn:[a-z-]+:sqs:([a-z0-9-]+):\d{12}:[\w-]+(\.fifo)?$/;

function arnFlag(value: string | undefined, flag: string): string | undefined {
  if (value !== undefined && !SQS_ARN.test(value)) throw new UsageError(`--${flag} is not an SQS queue ARN: ${value}`, USAGE);
  return value;
}

async function queueArnOf(target: Target, output: string): Promise<string> {
  const arn = await target.stackOutput(output);
  if (!arn)
    throw new CliError(
      `stack ${stackNameOf(target.stage!)} has no ${output} output (deployed before it existed?): pass --dlq-arn and --queue-arn`,
    );
  return arn;
}

export const dlqRedrive: Command = {
  name: 'dlq redrive',
  usage: USAGE,
  summary: 'start moving after-turn DLQ messages back to the queue (deployed stages only)',
  async run(args, io) {
    const { values } = parseCommand(args, {
      usage: USAGE,
      options: { 'dlq-arn': { type: 'string' }, 'queue-arn': { type: 'string' }, 'max-per-second': { type: 'string' } },
    });
    const dlqFlag = arnFlag(values['dlq-arn'], 'dlq-arn');
    const queueFlag = arnFlag(values['queue-arn'], 'queue-arn');
    if ((dlqFlag === undefined) !== (queueFlag === undefined)) throw new UsageError('--dlq-arn and --queue-arn go together', USAGE);
    const rate = values['max-per-second'] === undefined ? undefined : Number(values['max-per-second']);
    if (rate !== undefined && !(Number.isInteger(rate) && rate >= 1 && rate <= 500))
      throw new UsageError('--max-per-second must be an integer from 1 to 500', USAGE);
    if (values.stage === undefined && dlqFlag === undefined) {
      throw new CliError(
        'dlq redrive works on a deployed stage only: the local stack (serverless-offline) has no after-turn queue or DLQ ' +
          '(events invoke the function directly). Pass --stage <stage> (and --region), or --dlq-arn and --queue-arn.',
      );
    }
    const queues = dlqFlag
      ? // Explicit ARNs need no stack lookup; the queues' own region is where to call.
        { sourceArn: dlqFlag, destinationArn: queueFlag!, region: values.region ?? SQS_ARN.exec(dlqFlag)![1]! }
      : await withTarget(values, io, async (target) => ({
          sourceArn: await queueArnOf(target, 'AfterTurnDeadLetterQueueArn'),
          destinationArn: await queueArnOf(target, 'AfterTurnQueueArn'),
          region: target.region,
        }));
    const sqs = createSqsClient({ region: queues.region });
    try {
      const out = await sqs.send(
        new StartMessageMoveTaskCommand({
          SourceArn: queues.sourceArn,
          DestinationArn: queues.destinationArn,
          ...(rate === undefined ? {} : { MaxNumberOfMessagesPerSecond: rate }),
        }),
      );
      const { sourceArn, destinationArn } = queues;
      emit(io, values.json, { taskHandle: out.TaskHandle, sourceArn, destinationArn }, () => [
        `started moving messages from ${sourceArn} to ${destinationArn} (task ${out.TaskHandle})`,
        `progress: aws sqs list-message-move-tasks --source-arn ${sourceArn} --region ${queues.region}`,
      ]);
      return EXIT_OK;
    } finally {
      sqs.destroy();
    }
  },
};
