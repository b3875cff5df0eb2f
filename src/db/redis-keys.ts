import type { Country } from '../catalog/identifiers.js';

/**
 * Where each Redis key lives (REDIS_PREFIX is P). A Redis Cluster hashes only a key's hash tag (the part in braces), and
 * a Lua script or MULTI may touch keys of one slot only; BullMQ's scripts touch many keys of a queue,
 * the quota governor's many keys of a country. So every key starts with a tag that names its group:
 *
 * - `{P:JP}` — a country: its queues (BullMQ's prefix), its quota governor and its planner state.
 *   Each country is one slot, and different countries spread over the cluster's shards.
 * - `{P:<group>}` — what is not a country's: the account counters, the auth-failure gates, each
 *   rate limit, the planner's locks, each fair-queuing lane, the deliveries' queue.
 *
 * On one Redis the tags change nothing. Pub/sub channels need none: a cluster carries a PUBLISH to
 * every node.
 */

/** The tag of a country's keys (and the BullMQ prefix of its queues). */
export function countryTag(prefix: string, country: Country): string {
  return `{${prefix}:${country}}`;
}

/** Keys that belong to no country, by the group their scripts or multi-key commands need together. */
export type SharedGroup = 'accounts' | 'auth' | 'locks' | 'deliveries' | `rl:${string}` | `fair:${string}`;

export function sharedTag(prefix: string, group: SharedGroup): string {
  return `{${prefix}:${group}}`;
}

/** A pub/sub channel of the deployment. */
export function channelName(prefix: string, name: string): string {
  return `${prefix}:${name}`;
}

/** A glob (SCAN MATCH, KEYS) for every key of a prefix. Braces are not special in Redis's globs. */
export function keyPattern(prefix: string): string {
  return `{${prefix}:*`;
}
