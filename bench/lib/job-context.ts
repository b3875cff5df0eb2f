import { randomBytes } from 'node:crypto';
import type { Connection } from 'mongoose';
import type { Redis } from '../../src/db/redis.js';
import type { Config } from '../../config/env.js';
import type { JobContext } from '../../jobs/context.js';
import type { JobProducer } from '../../jobs/queues.js';
import { Deliveries } from '../../src/alerts/deliveries/service.js';
import { HeldDeliveries } from '../../src/alerts/deliveries/held.js';
import { DeliveryRecords } from '../../src/alerts/deliveries/records.js';
import { DeliveredAlerts } from '../../src/alerts/deliveries/alerts.js';
import { Endpoints } from '../../src/alerts/endpoints/endpoints.js';
import { AccountEvents } from '../../src/alerts/endpoints/events.js';
import { AlertFiring } from '../../src/alerts/rules/firing.js';
import { AlertSequences } from '../../src/alerts/rules/sequences.js';
import { GlobalJobQueue } from '../../jobs/global-queue.js';
import { deliveryJob } from '../../jobs/deliver.js';
import { AlertRules } from '../../src/alerts/rules/service.js';
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
  const appKey = randomBytes(32);
  const records = new DeliveryRecords(mongo);
  const sequences = new AlertSequences(mongo);
  const endpoints = new Endpoints(mongo, appKey, new AccountEvents(mongo), { maxEndpoints: config.accounts.maxEndpoints, records });
  const rules = new AlertRules({ conn: mongo, config, appKey, watches, endpoints, sequences, records });
  const fair = new FairTags(redis, prefix);
  const weights = new AccountWeights(mongo);
  const deliveryJobs = new GlobalJobQueue(deliveryJob, redis, prefix, logger, config);
  onCleanup('delivery queue', () => deliveryJobs.close());
  const deliveries = new Deliveries({
    jobs: deliveryJobs,
    logger,
    config,
    fair,
    weights,
    firing: new AlertFiring(mongo),
    rules,
    sequences,
    endpoints,
    records,
    held: new HeldDeliveries(mongo),
    now: () => new Date(),
    alerts: new DeliveredAlerts(mongo),
  });
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
    deliveries,
    fair,
    weights,
  };
}
