import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Config lives in test/; paths below are relative to the project root.
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    include: ['test/chaos/**/*.test.ts'],
    // The shared stack, then the counters that print the one-line chaos summary at the end.
    globalSetup: ['test/support/global-setup.ts', 'test/support/chaos/counts-setup.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // One file at a time: files start and kill their own servers; 2-core machines.
    maxWorkers: 1,
    fileParallelism: false,
  },
});
