// The system tests: real operating systems around the agent (systemd-nspawn, network namespaces),
// one at a time. `npm test` runs them after the main suite (`npm run test:system` alone; root needed).
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
