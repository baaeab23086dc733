import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Config lives in test/; paths below are relative to the project root.
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    include: ['bench/**/*.test.ts', 'test/unit/**/*.test.ts', 'test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // 2-core machines: bound parallel files so timing-sensitive lease tests stay honest.
    maxWorkers: 2,
  },
});
