// Publishes "a turn finished on this session" so the after-turn consumer can decide
// whether compaction is due (SPEC F3). Three transports, chosen from the parsed config.
import { randomUUID } from 'node:crypto';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { CompactionOrigin } from '../compaction/types.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { afterTurnFunctionName, sqsShapedEvent } from './local-invoke.js';

export interface AfterTurnEvent {
  tenantId: string;
  sessionId: string;
  /** K1: the conversation of the session (absent for sessions from before conversations). */
  conversationId?: string;
  origin: CompactionOrigin;
  /** The HTTP request that published it (x-request-id), carried into the consumer's logs. */
  correlationId?: string;
}

export interface AfterTurnPublisher {
  publish(e: AfterTurnEvent): Promise<void>;
}

export class SqsAfterTurnPublisher implements AfterTurnPublisher {
  constructor(
    private readonly queueUrl: string,
    private readonly client: SQSClient,
  ) {}

  async publish(e: AfterTurnEvent): Promise<void> {
    await this.client.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: JSON.stringify(e) }));
  }
}

/**
 * Local development: serverless-offline exposes the Lambda Invoke API; we hand the
 * afterTurn function the event SQS would have delivered. InvocationType Event makes
 * serverless-offline answer 202 at once and run the handler in the background, like SQS.
 */
export class LocalLambdaAfterTurnPublisher implements AfterTurnPublisher {
  constructor(
    private readonly endpoint: string,
    private readonly functionName: string,
    private readonly region = 'us-east-1',
  ) {}

  async publish(e: AfterTurnEvent): Promise<void> {
    const url = `${this.endpoint.replace(/\/+$/, '')}/2015-03-31/functions/${encodeURIComponent(this.functionName)}/invocations`;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-amz-invocation-type': 'Event' },
      body: JSON.stringify(sqsShapedEvent([{ messageId: randomUUID(), body: JSON.stringify(e) }], this.region)),
      signal: AbortSignal.timeout(5000),
    });
    if (res.status !== 202 && res.status !== 200) {
      throw new Error(`local invoke of ${this.functionName} failed: HTTP ${res.status} ${await res.text()}`);
    }
    await res.body?.cancel();
  }
}

/** Neither a queue nor a local endpoint: compaction only happens on explicit request. */
export class NoopAfterTurnPublisher implements AfterTurnPublisher {
  private warned = false;
  constructor(private readonly logger: Logger) {}

  publish(e: AfterTurnEvent): Promise<void> {
    if (this.warned) return Promise.resolve();
    this.warned = true;
    this.logger.warn('after-turn events are dropped: neither AFTER_TURN_QUEUE_URL nor LOCAL_LAMBDA_ENDPOINT is set', {
      tenantId: e.tenantId,
      sessionId: e.sessionId,
    });
    return Promise.resolve();
  }
}

export type PublisherConfig = Pick<
  Config,
  'afterTurnQueueUrl' | 'localLambdaEndpoint' | 'afterTurnFunctionName' | 'lambdaFunctionName' | 'region'
>;

/** SQS when a queue is configured, else the local invoke endpoint, else a no-op that says so once. */
export function publisherFromConfig(config: PublisherConfig, logger: Logger, sqsClient: () => SQSClient): AfterTurnPublisher {
  if (config.afterTurnQueueUrl) return new SqsAfterTurnPublisher(config.afterTurnQueueUrl, sqsClient());
  if (config.localLambdaEndpoint) {
    return new LocalLambdaAfterTurnPublisher(config.localLambdaEndpoint, afterTurnFunctionName(config), config.region);
  }
  return new NoopAfterTurnPublisher(logger);
}
