import { randomBytes } from 'node:crypto';
import type { Connection } from 'mongoose';
import type { Redis } from '../../src/db/redis.js';
import type { Config } from '../../config/env.js';
import type { JobContext } from '../../jobs/kind.js';
import type { JobProducer } from '../../jobs/queues.js';
import { DeliveryQueue } from '../../src/alerts/delivery-queue.js';
import { AlertService } from '../../src/alerts/service.js';
import type { Logger } from '../../src/logger.js';
import { Metrics } from '../../src/core/metrics.js';
import type { QuotaGovernor } from '../../src/quota/governor.js';
import { WatchService } from '../../src/watch/service.js';
import { onCleanup } from './infra.js';
import { FairTags } from '../../src/fairness/fair-tags.js';
import { RefreshPolicies } from '../../src/scheduling/policy-store.js';
import { AccountWeights } from '../../src/accounts/weights.js';

/**
 * The jobs' context for a benchmark that drives the planner in its own process, on its own clock
 * and governor: the services the real context builds, on the benchmark's connections.
 */
export function benchJobContext(parts: {
  config: Config;
  logger: Logger;
  mongo: Connection;
  redis: Redis;
  prefix: string;
  jobs: JobProducer;
  quota: QuotaGovernor;
}): JobContext {
  const { config, logger, mongo, redis, prefix } = parts;
  const watches = new WatchService(mongo, config);
  const alerts = new AlertService(mongo, config, randomBytes(32), watches);
  const fair = new FairTags(redis, prefix);
  const weights = new AccountWeights(mongo);
  const deliveries = new DeliveryQueue(redis, prefix, logger, alerts, config, fair, weights);
  onCleanup('delivery queue', () => deliveries.close());
  return {
    config,
    logger,
    mongo,
    redis,
    redisPrefix: prefix,
    policies: new RefreshPolicies(redis, prefix),
    jobs: parts.jobs,
    quota: parts.quota,
    metrics: new Metrics({ defaultMetrics: false }),
    watches,
    alerts,
    deliveries,
    fair,
    weights,
  };
}
