// The transcript item model (SPEC A1, A2). A session holds items of one declared format;
// the store keeps each item verbatim (what a client appends is what it reads back), and
// everything that has to understand an item (token counts, tool-call pairing, the human
// anchor, the summary, the summarizer's transcript) goes through the format's adapter.

/** Chosen when a session is created and inherited by its children (A1). */
export type ItemFormat = 'chat' | 'responses';

export const ITEM_FORMATS: readonly ItemFormat[] = ['chat', 'responses'];

/** A JSON value as the client sent it. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * One transcript entry exactly as the client sent it: a JSON object. Unknown fields (and, in
 * `responses`, unknown item types) are kept verbatim; only what the format defines is validated.
 */
export type Item = { [key: string]: JsonValue | undefined };

/** The roles a model sees. `responses` items that are not messages map to the role that produced them. */
export type ItemRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

/** A tool call an item makes (chat: `tool_calls[]`; responses: `function_call` and hosted tool calls). */
export interface ToolCallRef {
  /** chat: `tool_calls[].id`; responses: `callId` / `call_id`. Absent on legacy calls without an id. */
  id?: string;
  name: string;
  /** Arguments as the model wrote them (a string; objects are JSON-encoded). */
  arguments: string;
}

/** Understands the items of one format. Pure and synchronous; never mutates its arguments. */
export interface FormatAdapter {
  readonly format: ItemFormat;
  /** The role the model sees this item as, or undefined when the item has none (unknown types). */
  roleOf(item: Item): ItemRole | undefined;
  /** System / developer instructions: kept verbatim at the head of a compacted transcript. */
  isInstruction(item: Item): boolean;
  /** A real human turn (SPEC C8): role user, not synthetic scaffolding, not a summary. */
  isHumanTurn(item: Item): boolean;
  /** An earlier compaction summary (its text starts with SUMMARY_PREFIX). */
  isSummary(item: Item): boolean;
  /** Every text the model would see in this item: content parts, tool arguments, tool results. */
  textOf(item: Item): string;
  /**
   * Only what a message says in its own content (text parts, refusals): no tool names, arguments
   * or outputs; '' for items that are not messages. The digest reads facts and tasks from it.
   */
  messageTextOf(item: Item): string;
  /** Tool calls this item makes. */
  toolCallsOf(item: Item): ToolCallRef[];
  /** The call id this item answers (chat `tool` message, responses `*_output` / `function_call_result`). */
  toolResultIdOf(item: Item): string | undefined;
  /**
   * The item must stay directly before the one after it: a responses `reasoning` item belongs to
   * the call or message it produced (the Responses API refuses either without the other).
   * A transcript is never cut, and nothing is inserted, right after such an item.
   */
  bindsToNext(item: Item): boolean;
  /** The compaction summary as an item of this format (an assistant message). */
  summaryItem(text: string): Item;
  /**
   * C8 merge: `anchor`'s human text leading `into`'s content, as one user item with the
   * synthetic flag dropped. `into` is a user-role item (scaffolding).
   */
  mergeHumanText(into: Item, anchor: Item): Item;
  /** One readable line block for an LLM summarizer's transcript (tool calls and results included). */
  render(item: Item): string;
}

/** Where a malformed item is wrong: index in the request's `messages` and the field path inside it. */
export interface ItemProblem {
  index: number;
  /** e.g. `tool_calls[0].id`; empty when the item itself is wrong (not an object). */
  path: string;
  message: string;
}

/** Prefix every compaction summary's text starts with. */
export const SUMMARY_PREFIX = '[CONTEXT COMPACTION]';
