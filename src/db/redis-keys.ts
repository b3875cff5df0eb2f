import calculateSlot from 'cluster-key-slot';
import { COUNTRY_CODES } from '../../config/countries.js';
import type { Country } from '../core/identifiers.js';

/**
 * Where each Redis key lives (REDIS_PREFIX is P). A Redis Cluster hashes only a key's hash tag (the part in braces), and
 * a Lua script or MULTI may touch keys of one slot only; BullMQ's scripts touch many keys of a queue,
 * the quota governor's many keys of a country. So every key starts with a tag that names its group:
 *
 * - `{P:JP}` (or `{P:JP:n}`, see countryTag) — a country: its queues (BullMQ's prefix), its quota
 *   governor and its planner state. Each country is one slot, and the countries spread evenly over
 *   the cluster's shards.
 * - `{P:<group>}` — what is not a country's: the account counters, the auth-failure gates, each
 *   rate limit, the planner's locks, each fair-queuing lane, the deliveries' queue, the test
 *   button's counts.
 *
 * On one Redis the tags change nothing. Pub/sub channels need none: a cluster carries a PUBLISH to
 * every node.
 */

const SLOTS = 16_384;
const tags = new Map<string, Map<Country, string>>();

/**
 * The tag of a country's keys (and the BullMQ prefix of its queues): `{P:CC}`, or `{P:CC:n}` with
 * the least n that puts it in its own share of the slots. The countries of COUNTRY_CODES divide the
 * 16,384 slots into as many equal runs, in their order, and each country's tag falls in its run; a
 * cluster's masters hold runs of slots (`redis-cli --cluster create` gives each an equal one), so
 * the countries spread over them evenly whatever the prefix, not as the hash happens to fall. The
 * same prefix gives the same tags in every process.
 */
export function countryTag(prefix: string, country: Country): string {
  let mine = tags.get(prefix);
  if (!mine) tags.set(prefix, (mine = new Map()));
  let tag = mine.get(country);
  if (tag === undefined) {
    const run = COUNTRY_CODES.indexOf(country);
    for (let n = 0; tag === undefined; n++) {
      const text = n === 0 ? `${prefix}:${country}` : `${prefix}:${country}:${n}`;
      if (Math.floor((calculateSlot(text) * COUNTRY_CODES.length) / SLOTS) === run) tag = `{${text}}`;
    }
    mine.set(country, tag);
  }
  return tag;
}

/** Keys that belong to no country, by the group their scripts or multi-key commands need together. */
export type SharedGroup = 'accounts' | 'auth' | 'locks' | 'deliveries' | 'tests' | `rl:${string}` | `fair:${string}`;

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
