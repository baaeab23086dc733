// The conversation message shape shared by the store, the engines and the API.
export type Role = 'system' | 'user' | 'assistant' | 'tool';

export interface Message {
  role: Role;
  content: string;
  /** Synthetic scaffolding (task-list snapshot, truncation-recovery note): not a human turn (SPEC C8). */
  synthetic?: boolean;
  /** Any further client fields (name, tool_call_id, tool_calls, ...) are kept verbatim. */
  [extra: string]: unknown;
}

/** Prefix every compaction summary starts with. */
export const SUMMARY_PREFIX = '[CONTEXT COMPACTION]';
