// What an AWS SDK error means once the SDK's own retries (lib/aws-clients.ts) are spent: shared by
// the lineage store (lib/lineage/dynamo/retry.ts) and the API-key table (lib/api/api-keys.ts).

/** Throttling: DynamoDB refused the request without applying it. */
export const THROTTLING_NAMES = ['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded'];
/** Connection failures before a request was sent. */
export const UNSENT_CODES = ['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'];

/** Errors the SDK already retried: past its attempts they mean "busy", not "broken". */
const EXHAUSTED_NAMES = new Set([
  ...THROTTLING_NAMES,
  'InternalServerError',
  'ServiceUnavailable',
  'TimeoutError',
  'RequestTimeout',
  'TransactionInProgressException',
]);
const TRANSPORT_CODES = new Set([...UNSENT_CODES, 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);

/** A transient failure the SDK gave up on (throttling, 5xx, a timeout or a dropped connection). */
export function isExhaustedTransient(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const e = err as Error & { code?: string; $metadata?: { httpStatusCode?: number } };
  if (EXHAUSTED_NAMES.has(e.name) || (e.code !== undefined && TRANSPORT_CODES.has(e.code))) return true;
  const status = e.$metadata?.httpStatusCode;
  return status !== undefined && status >= 500;
}
