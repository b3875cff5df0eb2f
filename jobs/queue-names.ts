import type { Country } from '../src/core/identifiers.js';
import { QUOTA_CLASSES, type QuotaClass } from '../src/core/quota-classes.js';
import { countryTag, sharedTag } from '../src/db/redis-keys.js';

/**
 * A country's queue of each class (no `:` in BullMQ names): `forced-JP` for forced updates,
 * `import-JP`, `refresh-JP`, `crawl-JP`. Each class has its own, so the planner counts only the
 * refreshes it booked, and one class's backlog never holds another's workers.
 */
export function queueName(country: Country, cls: QuotaClass = 'refresh'): string {
  return `${cls}-${country}`;
}

/** BullMQ's prefix for a country's queues: the country's hash tag, which its governor shares. */
export function queuePrefix(prefix: string, country: Country): string {
  return countryTag(prefix, country);
}

/**
 * The deliveries' queue: one for every process and country, apart from every upstream queue, so a
 * slow receiver never holds a refresh and a refresh backlog never holds a delivery.
 */
export const DELIVERIES_QUEUE = 'deliveries';

/** The queues of every country (one so far). */
export type GlobalQueueName = typeof DELIVERIES_QUEUE;

/** BullMQ's prefix for a queue of every country: a hash tag of its own, apart from every country's. */
export function globalQueuePrefix(prefix: string, queue: GlobalQueueName): string {
  return sharedTag(prefix, queue);
}

/** Every queue of a country, one per class. */
export const QUEUE_CLASSES = QUOTA_CLASSES;

/** The job states an operator counts (metrics, `queues:status`): pending, running and finished. */
export const JOB_STATES = ['wait', 'prioritized', 'active', 'delayed', 'failed', 'completed'] as const;
