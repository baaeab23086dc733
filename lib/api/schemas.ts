// Input schemas for every route (SPEC F1, A1-A5), in zod/mini (a fraction of classic zod's size
// in each bundle, same English messages). Unknown top-level fields are refused so typos surface
// as 400s; items are validated by their format's rules (lib/items/validate.ts), which keep
// every field they do not define verbatim.
import * as z from 'zod/mini';
import { ITEM_FORMATS } from '../items/types.js';
import { DEFAULT_PAGE_ITEMS, MAX_PAGE_ITEMS } from '../lineage/limits.js';
import { childPath } from './json-body.js';
import { HttpError, invalidField } from './errors.js';
import { safeParse } from '../validation.js';

/** Session ids in paths: what the store generates (UUIDs) and nothing that could escape a key. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

export const sessionIdParam = z.string().check(z.regex(SESSION_ID_PATTERN, 'must be 1-128 letters, digits, "_" or "-"'));

/** K1: conversation ids are the client's: 1-128 letters, digits and `._:@-` (never '#' or '/', which keys and paths use). */
export const CONVERSATION_ID_PATTERN = /^[A-Za-z0-9._:@-]{1,128}$/;

export const conversationIdParam = z
  .string()
  .check(z.regex(CONVERSATION_ID_PATTERN, 'must be 1-128 characters of letters, digits and "._:@-"'));

/** What metadata may hold (issue 11): it is kept as JSON text, so these are the only limits. */
export const METADATA_MAX_BYTES = 16_384;
export const METADATA_MAX_DEPTH = 16;
export const METADATA_MAX_KEY_CHARS = 256;

export const createSessionBody = z.strictObject({
  format: z._default(z.enum(ITEM_FORMATS as ['chat', 'responses']), 'chat'),
  source: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  // Checked, not rebuilt: z.record copies by assignment, and `copy["__proto__"] = v` sets a
  // prototype instead of a key, dropping it. The client's own object is what gets stored.
  metadata: z.optional(
    z.custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v), 'must be a JSON object'),
  ),
});

const metadataField = z.custom<Record<string, unknown>>(
  (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
  'must be a JSON object',
);

/** E6: whose engine compacts the conversation. */
const compactionPolicyField = z.enum(['service', 'agent']);

/** H3: each at least 60 s (MIN_RETENTION_SECONDS); bounded by the tenant's (checked by the store). */
const retentionSeconds = z.number().check(z.int(), z.minimum(60), z.maximum(100 * 365 * 24 * 3600));
export const retentionField = z.strictObject({
  archivedSeconds: z.optional(retentionSeconds),
  endedSessionSeconds: z.optional(retentionSeconds),
});

/** PUT /conversations/{id}: everything optional; `format` given explicitly must match an existing conversation's. */
export const putConversationBody = z.strictObject({
  format: z.optional(z.enum(ITEM_FORMATS as ['chat', 'responses'])),
  source: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  metadata: z.optional(metadataField),
  turns: z.optional(z.enum(['optional', 'required'])),
  compaction: z.optional(compactionPolicyField),
  retention: z.optional(retentionField),
});

export const patchConversationBody = z.strictObject({
  metadata: z.optional(metadataField),
  turns: z.optional(z.enum(['optional', 'required'])),
  compaction: z.optional(compactionPolicyField),
  retention: z.optional(retentionField),
});

export const appendBody = z.strictObject({
  // Any count: one append lands whole or not at all (A7); the body limit bounds it.
  messages: z.array(z.unknown()).check(z.minLength(1)),
  expectedCount: z.optional(z.number().check(z.int(), z.minimum(0))),
});

export const compressBody = z.strictObject({
  mode: z._default(z.enum(['in_place', 'rotate']), 'in_place'),
  origin: z._default(z.enum(['turn', 'review', 'manual']), 'manual'),
  keepLast: z.optional(z.number().check(z.int(), z.minimum(0), z.maximum(1000))),
  /** E6: compact with the service's engine even under the conversation's `agent` policy. */
  force: z.optional(z.boolean()),
});

/** E1: a held attempt's begin. */
export const HELD_TTL_MIN_MS = 5_000;
export const HELD_TTL_MAX_MS = 900_000;
export const beginCompactionBody = z.strictObject({
  mode: z._default(z.enum(['in_place', 'rotate']), 'in_place'),
  origin: z._default(z.enum(['turn', 'review', 'manual']), 'manual'),
  ttlMs: z.optional(z.number().check(z.int(), z.minimum(HELD_TTL_MIN_MS), z.maximum(HELD_TTL_MAX_MS))),
  /** X2: an ownership receipt: begin only on this live session (conversation form) holding this many items, else skipped/stale. */
  expectedSessionId: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  expectedCount: z.optional(z.number().check(z.int(), z.minimum(0))),
  expectedLastSeq: z.optional(z.number().check(z.int(), z.minimum(0))),
});

/** E3: the replacement for items 1..throughSeq (an empty one is a no-op, C7); X2 `verbatim`: no C8 anchor, no `grown` no-op. */
export const commitCompactionBody = z.strictObject({ messages: z.array(z.unknown()), verbatim: z.optional(z.boolean()) });

/** Attempt ids are base64url (held-attempts.ts encodes them). */
export const attemptIdParam = z.string().check(z.regex(/^[A-Za-z0-9_-]{1,1024}$/, 'must be an attempt id from a begin'));

const count = (max: number) =>
  z
    .pipe(z.string().check(z.regex(/^\d{1,7}$/, 'must be a whole number')), z.transform(Number))
    .check(z.refine((n) => n >= 1 && n <= max, `must be between 1 and ${max}`));

export const listMessagesQuery = z.strictObject({
  limit: z.optional(count(MAX_PAGE_ITEMS)),
  cursor: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  tail: z.optional(count(MAX_PAGE_ITEMS)),
});

export const DEFAULT_LIMIT = DEFAULT_PAGE_ITEMS;

/** H1/H5: GET .../history and .../export (same limits as messages). */
export const historyQuery = z.strictObject({
  limit: z.optional(count(MAX_PAGE_ITEMS)),
  cursor: z.optional(z.string().check(z.minLength(1), z.maxLength(400))),
});

export const MAX_CONVERSATIONS_PAGE = 100;

export const listConversationsQuery = z.strictObject({
  limit: z.optional(count(MAX_CONVERSATIONS_PAGE)),
  cursor: z.optional(z.string().check(z.minLength(1), z.maxLength(600))),
});

export type CreateSessionBody = z.infer<typeof createSessionBody>;
export type AppendBody = z.infer<typeof appendBody>;
export type CompressBody = z.infer<typeof compressBody>;
export type ListMessagesQuery = z.infer<typeof listMessagesQuery>;

/** `messages[3].role` — the field path as clients write it. */
export function fieldPath(path: readonly PropertyKey[], root = ''): string {
  let out = root;
  for (const p of path) out = typeof p === 'number' ? `${out}[${p}]` : childPath(out, String(p));
  return out;
}

/** 400 from the first few zod issues, naming the field of the first. */
export function invalidRequest(err: z.core.$ZodError, where: string): HttpError {
  const parts = err.issues.slice(0, 5).map((i) => `${fieldPath(i.path) || where}: ${i.message}`);
  const first = err.issues[0];
  return new HttpError(400, 'invalid_request', parts.join('; '), { field: (first && fieldPath(first.path)) || where });
}

/** An absent body means `{}`; anything sent, including a JSON `null`, must match the schema. */
export function parseWith<T extends z.ZodMiniType>(schema: T, value: unknown, where: string): z.infer<T> {
  const r = safeParse(schema, value === undefined ? {} : value);
  if (!r.success) throw invalidRequest(r.error, where);
  return r.data;
}

/** Metadata the store can hold exactly (issue 11): bounded size, depth and key length. */
export function assertMetadata(metadata: Record<string, unknown>): void {
  const bytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
  if (bytes > METADATA_MAX_BYTES) throw invalidField('metadata', `is ${bytes} bytes as JSON; the limit is ${METADATA_MAX_BYTES}`);
  const stack: [unknown, number, string][] = [[metadata, 1, 'metadata']];
  while (stack.length > 0) {
    const [v, depth, path] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > METADATA_MAX_DEPTH) throw invalidField(path, `nested deeper than ${METADATA_MAX_DEPTH} levels`);
    if (Array.isArray(v)) {
      v.forEach((x, i) => stack.push([x, depth + 1, `${path}[${i}]`]));
      continue;
    }
    for (const [k, x] of Object.entries(v)) {
      if (k.length > METADATA_MAX_KEY_CHARS) throw invalidField(path, `has a key longer than ${METADATA_MAX_KEY_CHARS} characters`);
      stack.push([x, depth + 1, `${path}.${k}`]);
    }
  }
}
