import { z } from 'zod';
import { jsonText } from '../../config/parsers.js';
import type { Country } from '../core/identifiers.js';
import type { Redis } from '../db/redis.js';
import { countryTag } from '../db/redis-keys.js';
import { groupModelSchema } from './rate-groups.js';
import type { RefreshPolicy } from './refresh-objective.js';

/** How long a process reuses a country's policy it read: the planner tunes it every few minutes. */
const CACHE_MS = 60_000;
/** A policy no planner has tuned again for this long is dropped: its estimates are stale. */
const KEEP_MS = 86_400_000;

const stored = z.object({
  price: z.coerce.number().nonnegative(),
  weight: z.coerce.number().min(0).max(1),
  evenHours: z.coerce.number().positive(),
  boost: z.coerce.number().min(1).default(1),
  at: z.coerce.number().int(),
  planned: z.coerce.number().int().nonnegative().default(0),
  prior: jsonText('not JSON')
    .pipe(z.array(z.object({ rate: z.number().positive(), count: z.number().positive() })).max(400))
    .optional(),
  // A model this process cannot read leaves the products' priors at the country's, not the policy unread.
  groups: jsonText('not JSON').pipe(groupModelSchema).optional().catch(undefined),
});

export interface StoredPolicy extends RefreshPolicy {
  /** The demand it was tuned for, as a multiple of the budget (tune-policy.ts, nextBoost). */
  readonly boost: number;
  /** When it was tuned (epoch ms). */
  readonly at: number;
  /** Priority-0 products planned since. */
  readonly planned: number;
}

/**
 * Each country's tuned refresh policy (tune-policy.ts), kept in Redis beside the country's other
 * planner state: the planner writes it, and every worker process reads it to set the next refresh
 * of what it writes. A process keeps what it read for a minute.
 */
export class RefreshPolicies {
  readonly #cache = new Map<Country, { policy: StoredPolicy | null; until: number }>();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  #key(country: Country): string {
    return `${countryTag(this.prefix, country)}:refresh:policy`;
  }

  /** The country's policy as last tuned (null: none yet, or unreadable); `fresh` skips the process's copy. */
  async read(country: Country, now = Date.now(), fresh = false): Promise<StoredPolicy | null> {
    const hit = this.#cache.get(country);
    if (!fresh && hit && hit.until > now) return hit.policy;
    const raw = await this.redis.hgetall(this.#key(country));
    const parsed = stored.safeParse(raw);
    const policy = parsed.success ? parsed.data : null;
    this.#cache.set(country, { policy, until: now + CACHE_MS });
    return policy;
  }

  /** Counts priority-0 products a plan took, for the next tuning's boost (only while a policy is kept). */
  async countPlanned(country: Country, n: number): Promise<void> {
    if (n <= 0) return;
    const key = this.#key(country);
    // HINCRBY would create the hash; a count with no policy beside it would read as a broken policy.
    await this.redis.eval(
      "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HINCRBY', KEYS[1], 'planned', ARGV[1]) end return 0",
      1,
      key,
      String(n),
    );
  }

  async write(country: Country, policy: RefreshPolicy & { readonly boost: number }, now = Date.now()): Promise<void> {
    const key = this.#key(country);
    const value: StoredPolicy = {
      price: policy.price,
      weight: policy.weight,
      evenHours: policy.evenHours,
      boost: policy.boost,
      at: now,
      planned: 0,
      ...(policy.prior ? { prior: policy.prior } : {}),
      ...(policy.groups ? { groups: policy.groups } : {}),
    };
    await this.redis
      .multi()
      .del(key)
      .hset(key, Object.fromEntries(Object.entries(value).map(([k, v]) => [k, typeof v === 'object' ? JSON.stringify(v) : String(v)])))
      .pexpire(key, KEEP_MS)
      .exec();
    this.#cache.set(country, { policy: value, until: now + CACHE_MS });
  }
}
