import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Config lives in test/; paths below are relative to the project root.
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    include: ['test/chaos/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 60_000,
    maxWorkers: 1,
  },
});
