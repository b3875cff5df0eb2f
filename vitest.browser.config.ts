import { defineConfig } from 'vitest/config';

// `npm run test:browser`: the account page (/app) in headless Chromium. Kept out of `npm test`
// (vitest.config.ts includes test/**, so it excludes test/browser/**).
export default defineConfig({
  test: {
    include: ['test/browser/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 90_000,
    hookTimeout: 60_000,
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/openapi-setup.ts'],
  },
});
