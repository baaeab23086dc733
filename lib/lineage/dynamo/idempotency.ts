// Idempotency-Key records (SPEC A3). A record is written in the same transaction as what it
// guards, so a request lands with its key or not at all; a replay finds it and answers the
// first response without writing anything.
import { IdempotencyKeyReusedError } from '../errors.js';
import type { IdempotencyInput, StoredResponse } from '../types.js';
import type { Key } from './table.js';

export interface IdempotencyRecord {
  pk: string;
  sk: string;
  requestHash: string;
  status: number;
  /** The first response's body as JSON text. */
  bodyJson: string;
  /** TTL, epoch seconds: DynamoDB deletes the record some time after; reads ignore it from then on. */
  expiresAt: number;
  createdAt: string;
}

export function idempotencyRecord(
  key: Key,
  input: IdempotencyInput,
  response: StoredResponse,
  nowMs: number,
  ttlSeconds: number,
): IdempotencyRecord {
  return {
    ...key,
    requestHash: input.requestHash,
    status: response.status,
    bodyJson: JSON.stringify(response.body),
    expiresAt: Math.floor(nowMs / 1000) + ttlSeconds,
    createdAt: new Date(nowMs).toISOString(),
  };
}

/** The record if it is still within its retention. */
export function liveRecord(record: IdempotencyRecord | undefined, nowMs: number): IdempotencyRecord | undefined {
  return record && record.expiresAt * 1000 > nowMs ? record : undefined;
}

/** The first response for the same request; the same key with another request is refused (422). */
export function replay(record: IdempotencyRecord, input: IdempotencyInput): StoredResponse {
  if (record.requestHash !== input.requestHash) throw new IdempotencyKeyReusedError(input.key);
  return { status: record.status, body: JSON.parse(record.bodyJson) as unknown };
}
