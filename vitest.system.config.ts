// The system tests: real operating systems around the agent (systemd-nspawn, Docker), too slow
// for `npm test`. `npm run test:system` runs them; .ci/run runs it after npm test.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/system/**/*.system.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // One booted host or compose stack at a time: the machine has two cores.
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 900_000,
  },
});
