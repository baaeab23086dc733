// Limits every store implementation keeps (they come from DynamoDB's and API Gateway's, which are the tightest).

/** One item's JSON (A7): a large item spans several rows (lib/lineage/dynamo/rows.ts). */
export const MAX_ITEM_BYTES = 4_000_000;
/** One append's stored rows (A7): a 5 MB request body of items, with room for their index. */
export const MAX_APPEND_BYTES = 6_000_000;
/** A request body (A7): 5 MB, under API Gateway's 10 MB and Lambda's 6 MB payload limits. */
export const MAX_BODY_BYTES = 5_242_880;
/** Items in one page (A5). */
export const MAX_PAGE_ITEMS = 1000;
export const DEFAULT_PAGE_ITEMS = 500;
/** A page's items stay under this many bytes of JSON so a response stays under 5 MB (Lambda's limit is 6 MB). */
export const MAX_PAGE_BYTES = 4_500_000;
/** Hops followed when resolving the live tip of a chain whose records predate tip pointers. */
export const MAX_TIP_HOPS = 64;
/** How long an Idempotency-Key is remembered by default (A3). */
export const DEFAULT_IDEMPOTENCY_TTL_SECONDS = 24 * 3600;
