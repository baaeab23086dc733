// The lineage store contract (store-agnostic). The DynamoDB implementation is lib/lineage/dynamo/store.ts.
export * from './types.js';
export * from './errors.js';
export * from './branches.js';
export * from './limits.js';
export { encodeCursor, decodeCursor, InvalidCursorError } from './cursor.js';
export { asIs, withEstimates } from './prepare.js';
