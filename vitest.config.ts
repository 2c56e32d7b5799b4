import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // tempDir()'s directories go with each file (after its own hooks: setup files' run last).
    setupFiles: ['test/helpers/cleanup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests spawn real servers and interpreters; two cores are shared.
    maxWorkers: 2,
  },
});
