// Names for the document's schemas. Every type here is an alias into openapi-types.ts, which
// `npm run build:client-types` generates from functions/openapi.json: nothing is hand-copied.
import type { components, operations } from './openapi-types.js';

type Schemas = components['schemas'];

export type Format = Schemas['Format'];
export type ChatMessage = Schemas['ChatMessage'];
export type ResponsesItem = Schemas['ResponsesItem'];
/** An item of the session's format, returned exactly as appended (SPEC A1). */
export type Item = Schemas['Item'];
export type Session = Schemas['Session'];
/** A session as GET /lineage lists it: without metadata. */
export type LineageEntry = Schemas['LineageEntry'];
export type CreateSessionRequest = Schemas['CreateSessionRequest'];
export type MessagesPage = Schemas['MessagesPage'];
export type PopResponse = Schemas['PopResponse'];
export type Lineage = Schemas['LineageResponse'];
export type CompressRequest = Schemas['CompressRequest'];
export type CompressResponse = Schemas['CompressResponse'];
export type CompressMode = NonNullable<CompressRequest['mode']>;
export type CompressOrigin = NonNullable<CompressRequest['origin']>;
export type ErrorBody = Schemas['ErrorBody'];
/** SPEC E1-E4: a held compaction attempt (the agent's own engine) and its begin's answer. */
export type CompactionAttempt = Schemas['CompactionAttempt'];
export type BeginCompactionResponse = Schemas['BeginCompactionResponse'];
/** SPEC X1: an Agents SDK history transaction and its answer. */
export type HistoryTransactionRequest = Schemas['HistoryTransactionRequest'];
export type HistoryTransactionResponse = Schemas['HistoryTransactionResponse'];
/** SPEC T1-T6: a turn as granted (with its secret token) and as shown to others (without). */
export type GrantedTurn = Schemas['GrantedTurn'];
export type Turn = Schemas['Turn'];
export type BeginTurnRequest = Schemas['BeginTurnRequest'];
/** K1: one stable id for a whole chain; its routes act on the live session. */
export type Conversation = Schemas['Conversation'];
export type ConversationsPage = Schemas['ConversationsPage'];
/** H1: a page of GET .../history. */
export type HistoryPage = Schemas['HistoryPage'];
export type ImportResult = Schemas['ImportResponse'];
export type HistoryEntry = Schemas['HistoryEntry'];
export type Retention = Schemas['Retention'];
export type PutConversationRequest = Schemas['PutConversationRequest'];
export type ErrorCode = ErrorBody['code'];
export type ListMessagesQuery = NonNullable<operations['listMessages']['parameters']['query']>;

/** A session is live when it was neither rotated nor ended (an ended one answers 409 to writes). */
export function isLive(s: Pick<Session, 'endedAt' | 'childSessionId'>): boolean {
  return s.endedAt === null && s.childSessionId === null;
}
