import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * `npm run test:cluster`: the product's tests of the refresh, forced updates, imports, alerts, quota
 * and faults, against a real local Redis Cluster (3 masters, 3 replicas; test/cluster/global-setup.ts),
 * and the cluster's own tests (test/cluster/). The files listed here build their connections from
 * the test context (test/helpers/context.ts, test-redis.ts), so they run unchanged on either.
 */
export default defineConfig({
  test: {
    include: [
      'test/cluster/**/*.test.ts',
      'test/workers/pipeline.test.ts',
      'test/workers/jobs.test.ts',
      'test/workers/quota.test.ts',
      'test/workers/daily-quota.test.ts',
      'test/workers/durability.test.ts',
      'test/workers/fairness.test.ts',
      'test/account-api/watch.test.ts',
      'test/account-api/auth.test.ts',
      'test/account-api/rate-limit.test.ts',
      'test/account-api/account-counters.test.ts',
      'test/alerts/deliveries.test.ts',
      'test/alerts/delivery-fairness.test.ts',
      'test/alerts/webhooks.test.ts',
      'test/faults/scheduler-kill.test.ts',
      'test/faults/worker-kill.test.ts',
      'test/scheduler/roles-in-copies.test.ts',
    ],
    pool: 'forks',
    // As in vitest.config.ts: one import of the app per worker, not per file, and two files at once at least.
    isolate: false,
    maxWorkers: Math.max(2, availableParallelism()),
    // A failover takes ~4 s on an idle machine; a starved CI box can take several times that.
    testTimeout: 90_000,
    hookTimeout: 60_000,
    globalSetup: ['test/cluster/global-setup.ts'],
    setupFiles: ['test/helpers/openapi-setup.ts'],
  },
});
