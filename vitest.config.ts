import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Fails a test that leaks an agent process, a server or a timer (test/setup/leak-check.ts).
    setupFiles: ['test/setup/leak-check.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Each test file gets its own database, so files run in parallel safely.
    fileParallelism: true,
    // In CI, also write a JSON report so .ci/run can print a plain "N passed, N failed" line.
    reporters: process.env.CI ? ['default', ['json', { outputFile: 'test-results.json' }]] : ['default'],
  },
});
