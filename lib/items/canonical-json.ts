// A request's meaning, not its bytes (SPEC A3, issue 22): clients in other languages re-serialize
// a retried body with other whitespace, key order or escapes. Canonical JSON sorts object keys
// (by UTF-16 code units, as JSON.stringify's own key order is insertion order), writes no
// whitespace and lets JSON.stringify spell strings and numbers one way (1.0 and 1, "\u00e9" and
// "é" are the same value once parsed). The body was already bounded in size and depth.
import { createHash } from 'node:crypto';

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of Object.keys(obj).sort()) parts.push(`${JSON.stringify(key)}:${canonicalJson(obj[key])}`);
  return `{${parts.join(',')}}`;
}

/** The Idempotency-Key request digest: the same meaning is a replay, another meaning is 422. */
export function requestDigest(body: unknown): string {
  // An absent body means `{}` to every route (parseWith), so it is the same request.
  return createHash('sha256')
    .update(canonicalJson(body === undefined ? {} : body))
    .digest('base64url');
}
