// Local stand-in for the SQS -> Lambda event source: builds the event SQS would deliver
// and names the afterTurn function the way the Serverless Framework does.
import { createHash, randomUUID } from 'node:crypto';

export interface QueueMessage {
  messageId: string;
  body: string;
}

/** An SQS event as Lambda receives it (aws-lambda's SQSEvent shape, without importing AWS types here). */
export function sqsShapedEvent(messages: readonly QueueMessage[], region = 'us-east-1', receiveCount = 1) {
  const now = String(Date.now());
  return {
    Records: messages.map((m) => ({
      messageId: m.messageId,
      receiptHandle: randomUUID(),
      body: m.body,
      attributes: {
        ApproximateReceiveCount: String(receiveCount),
        SentTimestamp: now,
        SenderId: 'local',
        ApproximateFirstReceiveTimestamp: now,
      },
      messageAttributes: {},
      md5OfBody: createHash('md5').update(m.body).digest('hex'),
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:${region}:000000000000:after-turn`,
      awsRegion: region,
    })),
  };
}

/**
 * The deployed name of the afterTurn function. Serverless names functions
 * `{service}-{stage}-{functionKey}`; inside another function of the same service
 * (AWS_LAMBDA_FUNCTION_NAME, set by serverless-offline too) we swap the key.
 */
export function afterTurnFunctionName(config: { afterTurnFunctionName?: string; lambdaFunctionName?: string }): string {
  if (config.afterTurnFunctionName) return config.afterTurnFunctionName;
  const self = config.lambdaFunctionName;
  const cut = self?.lastIndexOf('-') ?? -1;
  if (self && cut > 0) return `${self.slice(0, cut)}-afterTurn`;
  throw new Error('cannot name the afterTurn function: set AFTER_TURN_FUNCTION_NAME ({service}-{stage}-afterTurn)');
}
