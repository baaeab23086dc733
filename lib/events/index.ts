// The EventBridge publisher is deliberately not re-exported: from-env loads it on first use,
// and a static import here would put the SDK back on every cold start.
export * from './session-compacted.js';
export { LocalCompactionEventPublisher, readCompactionEvents, type LocalPublisherOptions } from './local-publisher.js';
export { compactionEventPublisherFrom, type EventsConfig } from './from-env.js';
