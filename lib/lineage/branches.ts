// Branches (SPEC H2): a new conversation whose root holds a copy of another conversation's items
// 1..n and records where it came from. The contract's types and refusals; the DynamoDB
// implementation is lib/lineage/dynamo/branches.ts.
import type { SessionRef } from '../session-ref.js';
import { LineageError } from './errors.js';
import type { ConversationRecord, IdempotencyInput, SessionRecord, StoredResponse } from './types.js';

/** H2: the typed lineage edge a branch's root (and its conversation) carries. */
export interface BranchedFrom {
  /** The conversation branched from. */
  conversationId: string;
  /** Its session whose items were copied (the live one at the branch). */
  sessionId: string;
  /** The branch holds that session's items 1..seq (positions, as a client counts what it reads). */
  seq: number;
}

export interface BranchInput {
  /** The session whose items are copied: a conversation route passes its live session. */
  from: SessionRef;
  /** The new conversation's id (K1 rules; unused for this tenant, else ConversationExistsError). */
  conversationId: string;
  /** Items 1..fromSeq are copied; default: all of them (the session's last item). */
  fromSeq?: number;
  /** Only from the chain's live session: an ended one is SessionEndedError naming the tip (a conversation route follows it). */
  liveOnly?: boolean;
  /** A3: a retried branch with its key creates one branch and answers the first response. */
  idempotency?: IdempotencyInput;
  /** The response to remember with the key. */
  respond: (conversation: ConversationRecord, session: SessionRecord) => StoredResponse;
}

export type BranchResult =
  { replayed: false; conversation: ConversationRecord; session: SessionRecord } | { replayed: true; response: StoredResponse };

/** H2: the branch's conversation id is taken (a conversation, or a session of a chain from before conversations). */
export class ConversationExistsError extends LineageError {
  override readonly name = 'ConversationExistsError';
  constructor(readonly conversationId: string) {
    super(`conversation ${conversationId} already exists; a branch creates a new conversation: choose another id`, {
      status: 409,
      code: 'conversation_exists',
    });
  }
}

/** H2: fromSeq names no item of the session (it holds `count`). */
export class BranchPointError extends LineageError {
  override readonly name = 'BranchPointError';
  constructor(
    readonly fromSeq: number,
    readonly count: number,
  ) {
    super(
      count === 0
        ? `fromSeq ${fromSeq}: the conversation holds no items yet; branch without fromSeq to copy nothing`
        : `fromSeq ${fromSeq} is outside 1..${count}: the conversation's live session holds ${count} items`,
      { status: 400, code: 'from_seq_out_of_range', details: { field: 'fromSeq', messageCount: count } },
    );
  }
}
