import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Against a Redis Cluster of their own: `npm run test:cluster` (vitest.cluster.config.ts); in
    // Chromium: `npm run test:browser` (vitest.browser.config.ts).
    exclude: ['test/cluster/**', 'test/browser/**', 'node_modules/**'],
    // Each file builds its own app on its own Redis prefix and database, so files may run in parallel.
    pool: 'forks',
    // Files share a worker's module cache: every file builds its own context (no module-level
    // singletons), so only the import is shared, and importing the app once per file cost more
    // than a minute of CI. A file must not mock modules (vi.mock would leak into the next file).
    isolate: false,
    // The files mostly wait (on Redis, MongoDB, child processes, receivers), so at least two run at
    // once even on a 2-core machine, where vitest's default (cores − 1) would run them one by one.
    maxWorkers: Math.max(2, availableParallelism()),
    // Generous: tests wait on events, and a starved 2-core CI box can be slow to deliver them; a
    // passing test takes no longer for it.
    testTimeout: 90_000,
    hookTimeout: 30_000,
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/openapi-setup.ts'],
  },
});
