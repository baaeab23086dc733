export * from './compaction-metrics.js';
