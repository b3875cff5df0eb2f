import type { Country } from '../core/identifiers.js';
import { countryTag } from '../db/redis-keys.js';

/**
 * A country's breaker in Redis: next to its governor's keys, under the same hash tag, so the
 * permit script reads it in the same slot on Redis Cluster.
 */
export function breakerKey(prefix: string, country: Country): string {
  return `${countryTag(prefix, country)}:gov:breaker`;
}

/** How long until a probe due at `probeAt` (epoch ms): at least a second, as Retry-After counts. */
export function untilProbeMs(probeAt: number, now = Date.now()): number {
  return Math.max(1_000, Math.ceil(probeAt - now));
}
