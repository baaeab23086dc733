export { AfterTurnConsumer, type AfterTurnConsumerDeps, type BatchReport, type Invocation, type RecordReport } from './consumer.js';
export { AfterTurnRetryableError, InvalidAfterTurnEventError } from './errors.js';
export { afterTurnEventSchema, parseAfterTurnBody } from './event.js';
export { handleAfterTurn, type AfterTurnDeps, type AfterTurnInput, type AfterTurnResult } from './handle-after-turn.js';
export { afterTurnPersistence, IDEMPOTENCY_PK, idempotentPerMessage } from './idempotency.js';
export { afterTurnFunctionName, sqsShapedEvent, type QueueMessage } from './local-invoke.js';
export {
  LocalLambdaAfterTurnPublisher,
  NoopAfterTurnPublisher,
  publisherFromEnv,
  SqsAfterTurnPublisher,
  type AfterTurnEvent,
  type AfterTurnPublisher,
} from './publisher.js';
export { consumerFromEnv } from './from-runtime.js';
