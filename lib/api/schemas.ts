// Input schemas for every route (SPEC F1). Unknown top-level fields are refused so typos
// surface as 400s; message objects keep client extras (name, tool_call_id, ...) verbatim.
import { z } from 'zod';
import { MAX_ATOMIC_APPEND_MESSAGES } from '../lineage/dynamo-lineage-store.js';

/** Session ids in paths: what the store generates (UUIDs) and nothing that could escape a key. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

export const sessionIdParam = z.string().regex(SESSION_ID_PATTERN, 'must be 1-128 letters, digits, "_" or "-"');

/**
 * One request is one store transaction, so an append is all-or-nothing: a request split over
 * several transactions could half-land before a 409/503, and a client retry would duplicate it.
 */
export const MAX_MESSAGES_PER_APPEND = MAX_ATOMIC_APPEND_MESSAGES;

export const createSessionBody = z.strictObject({
  source: z.string().min(1).max(200).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

export const messageInput = z.looseObject({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  synthetic: z.boolean().optional(),
});

export const appendMessagesBody = z.strictObject({
  messages: z.array(messageInput).min(1).max(MAX_MESSAGES_PER_APPEND),
});

export const compressBody = z.strictObject({
  mode: z.enum(['in_place', 'rotate']).default('in_place'),
  origin: z.enum(['turn', 'review', 'manual']).default('manual'),
  keepLast: z.number().int().min(0).max(1000).optional(),
});

export type CreateSessionBody = z.infer<typeof createSessionBody>;
export type AppendMessagesBody = z.infer<typeof appendMessagesBody>;
export type CompressBody = z.infer<typeof compressBody>;
