import type { Country } from '../core/identifiers.js';
import { QUOTA_CLASSES, type QuotaClass } from '../core/quota-classes.js';
import { countryTag } from '../db/redis-keys.js';

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

/** Every queue of a country, one per class. */
export const QUEUE_CLASSES = QUOTA_CLASSES;

/** The job states an operator counts (metrics, `queues:status`): pending, running and finished. */
export const JOB_STATES = ['wait', 'prioritized', 'active', 'delayed', 'failed', 'completed'] as const;
