// Limits every store implementation keeps (they come from DynamoDB's and API Gateway's, which are the tightest).

/** Items one append holds: one transaction of at most 100 items, less the session record update. */
export const MAX_ATOMIC_APPEND_ITEMS = 98;
/** One stored item (the item's JSON and its keys) stays under DynamoDB's 400 KB item limit with headroom for TTL. */
export const MAX_ITEM_BYTES = 380_000;
/** One append transaction: DynamoDB's 4 MB transaction limit less headroom for keys and the session record. */
export const MAX_APPEND_BYTES = 3_800_000;
/** Items in one page (A5). */
export const MAX_PAGE_ITEMS = 1000;
export const DEFAULT_PAGE_ITEMS = 500;
/** A page's items stay under this many bytes of JSON so a response stays under 5 MB (Lambda's limit is 6 MB). */
export const MAX_PAGE_BYTES = 4_500_000;
/** Hops followed when resolving the live tip of a chain whose records predate tip pointers. */
export const MAX_TIP_HOPS = 64;
/** How long an Idempotency-Key is remembered by default (A3). */
export const DEFAULT_IDEMPOTENCY_TTL_SECONDS = 24 * 3600;
