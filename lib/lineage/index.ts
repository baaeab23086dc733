// Public surface of the lineage store.
export * from './types.js';
export * from './errors.js';
export { DynamoLineageStore, type DynamoLineageStoreOptions } from './dynamo-lineage-store.js';
export { MAX_MESSAGE_ITEM_BYTES } from './items.js';
export { sessionPk } from './keys.js';
