// The package's main entry (@session-lineage/client): the HTTP client, its errors and types.
// Nothing here needs @openai/agents-core; LineageSession is the ./agents entry (agents.ts).
export { LineageClient, newIdempotencyKey, DEFAULT_TIMEOUT_MS } from './client.js';
export type {
  LineageClientOptions,
  CallOptions,
  CreateSessionOptions,
  AppendOptions,
  AppendResult,
  PageOptions,
  ConversationAppendOptions,
  HeldTurn,
} from './client.js';
export * from './errors.js';
export { responsesCompactEngine } from './held.js';
export type {
  CompactionEngine,
  CompactionEngineInput,
  CompactWithOptions,
  CompactWithResult,
  ResponsesCompactClient,
  ResponsesCompactOptions,
} from './held.js';
export { UnsupportedValueError } from './json-values.js';
export { DEFAULT_RETRY_POLICY, retryDelayMs, type RetryPolicy, type Safety } from './retry.js';
export * from './types.js';
export type { paths, components, operations } from './openapi-types.js';
export { chunks, MAX_APPEND_BODY_BYTES, MAX_TAIL } from './chunks.js';
