// The service's one error root (issue 25). Every error the service raises on purpose is a
// ServiceError that says how it is answered: the HTTP status and the API's error code (SPEC F1),
// whether a later try can succeed (`retryable`: the SQS consumer and the HTTP Retry-After read it),
// the extra answer fields (`details`, e.g. the live tip on a 409) and its `cause`. The HTTP and SQS
// adapters read these fields; nothing lists error classes a second time.

/** The API's error codes (`{error: {code, message}}`, functions/openapi.json). */
export type ErrorCode =
  | 'invalid_json'
  | 'invalid_request'
  | 'unauthorized'
  | 'not_found'
  | 'method_not_allowed'
  | 'session_ended'
  | 'chain_deleted'
  | 'count_mismatch'
  | 'suffix_mismatch'
  | 'cursor_stale'
  | 'lineage_too_deep'
  | 'conflict'
  | 'format_mismatch'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'idempotency_key_reused'
  | 'lease_unavailable'
  | 'unavailable'
  | 'outcome_unknown'
  | 'rate_limited'
  | 'lease_lost'
  | 'lease_token_invalid'
  | 'committed'
  | 'commit_in_progress'
  | 'agent_engine'
  | 'conversation_busy'
  | 'turn_superseded'
  | 'turn_expired'
  | 'turn_ended'
  | 'turn_required'
  | 'retention_over_tenant_limit'
  | 'turn_token_invalid'
  | 'rollback_unavailable'
  | 'conversation_exists'
  | 'from_seq_out_of_range'
  | 'internal';

export interface ServiceErrorInit {
  status: number;
  code: ErrorCode;
  retryable?: boolean;
  /** Extra top-level answer fields (e.g. `liveSessionId` on 409 session_ended). */
  details?: Record<string, unknown>;
  /** What the API answers when `message` holds internals a client must not see. */
  publicMessage?: string;
  cause?: unknown;
}

export class ServiceError extends Error {
  override readonly name: string = 'ServiceError';
  readonly status: number;
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: Record<string, unknown>;
  readonly publicMessage: string;

  constructor(message: string, init: ServiceErrorInit) {
    super(message, init.cause !== undefined ? { cause: init.cause } : undefined);
    this.status = init.status;
    this.code = init.code;
    this.retryable = init.retryable ?? false;
    this.details = init.details ?? {};
    this.publicMessage = init.publicMessage ?? message;
  }

  /** An internal failure: answered as an opaque 500 (the log has the message). */
  get isInternal(): boolean {
    return this.code === 'internal';
  }
}

/** For errors the service did not raise itself: an unknown value as an Error, its cause kept. */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err), { cause: err });
}

/** An error as a log field: name, message, stack and the chain of causes (issue 25: one log channel, causes kept). */
export function errorFields(err: unknown, depth = 0): Record<string, unknown> {
  if (!(err instanceof Error)) return { message: String(err) };
  const out: Record<string, unknown> = { name: err.name, message: err.message };
  if (err instanceof ServiceError) out['code'] = err.code;
  if (err.stack !== undefined) out['stack'] = err.stack;
  if (err.cause !== undefined && depth < 3) out['cause'] = errorFields(err.cause, depth + 1);
  return out;
}
