import type { Redis } from '../db/redis.js';
import { evalScript } from '../db/redis.js';
import type { Country } from '../core/identifiers.js';
import { DayQuotaSpentError } from '../core/errors.js';
import type { ClassShares, QuotaClass } from '../core/quota-classes.js';
import type { DailyUsage } from './daily-usage.js';
import { SEED_DAY } from './governor-scripts.js';
import { dayLeftFraction, quotaDayOf, type QuotaDay } from './quota-day.js';

export interface DayStatus {
  readonly country: Country;
  readonly day: QuotaDay;
  readonly limit: number;
  readonly used: number;
  readonly forcedUsed: number;
  /** What scheduled work (refreshes, imports, crawls) may have spent by now: the day less the reserve for forced updates. */
  readonly scheduledLimit: number;
  readonly forcedLimit: number;
  /** Each class with a day limit of its own: its calls today and that limit. */
  readonly classes: Readonly<Record<Exclude<QuotaClass, 'refresh'>, { readonly used: number; readonly limit: number }>>;
  /** True when the upstream said the day's quota is spent. */
  readonly spent: boolean;
  /** Mean wait for a permit today, every process together (ms). */
  readonly meanWaitMs: number;
}

/** The day's limits of a country at a moment: the scheduled classes' part and each class's own. */
export interface DayLimits {
  readonly day: QuotaDay;
  readonly scheduled: number;
  readonly own: Record<Exclude<QuotaClass, 'refresh'>, number>;
}

/** The day hash's fields DayStatus reads, in this order. */
const DAY_FIELDS = ['total', 'od', 'im', 'cr', 'spent', 'wait_ms'] as const;

/** Whether the upstream refuses a country (its breaker is open, with its next probe), and its day. */
export interface Admission {
  readonly refused?: { readonly reason: string; readonly probeAt: number };
  readonly day: DayStatus;
}

export const DAY_TTL_MS = 3 * 86_400_000;

export interface QuotaDaysDeps {
  readonly redis: Redis;
  /** The country's quota; throws for a country with none. */
  readonly quota: (country: Country) => { readonly perDay: number };
  /** The country's day hash for a quota day, and its breaker. */
  readonly keys: (country: Country, dayKey: string) => { readonly day: string; readonly breaker: string };
  readonly dayTimeZone: string;
  readonly shares: ClassShares;
  readonly forcedReserve: number;
  readonly usage: DailyUsage;
}

/**
 * The quota day's count of each country as every process sees it (the day hash in Redis, seeded
 * from its MongoDB copy) and the limits the governor derives from it: the scheduled classes' part,
 * which shrinks the reserve for forced updates as the day goes, and each class's own.
 */
export class QuotaDays {
  constructor(private readonly deps: QuotaDaysDeps) {}

  /** The day's limits of a country at `at`. */
  limits(country: Country, at: number): DayLimits {
    const q = this.deps.quota(country);
    const day = quotaDayOf(at, this.deps.dayTimeZone);
    // The reserve shrinks with the day, so by midnight the other classes may have spent all of it.
    const reserve = Math.ceil(q.perDay * this.deps.forcedReserve * dayLeftFraction(day, at));
    const share = this.deps.shares;
    return {
      day,
      scheduled: Math.max(0, q.perDay - reserve),
      own: {
        forced: Math.floor(q.perDay * share.forced),
        import: Math.floor(q.perDay * share.import),
        crawl: Math.floor(q.perDay * share.crawl),
      },
    };
  }

  /** Sets the day's count where Redis has none, from the MongoDB copy. */
  async seed(country: Country, at: number): Promise<void> {
    const day = quotaDayOf(at, this.deps.dayTimeZone);
    const copy = await this.deps.usage.read(country, day.key);
    const pairs = ['total', String(copy.calls), 'od', String(copy.forced), 'im', String(copy.imports), 'cr', String(copy.crawls)];
    await evalScript(this.deps.redis, SEED_DAY, 1, this.deps.keys(country, day.key).day, String(DAY_TTL_MS), ...pairs);
  }

  /**
   * The upstream said the day's quota is spent: no call of any kind until the next quota day.
   * Returns the error that says so, for the call that learnt it.
   */
  async markDaySpent(country: Country, at: number): Promise<DayQuotaSpentError> {
    this.deps.quota(country);
    const day = quotaDayOf(at, this.deps.dayTimeZone);
    const key = this.deps.keys(country, day.key).day;
    await this.deps.redis.multi().hset(key, 'spent', '1').hsetnx(key, 'total', '0').pexpire(key, DAY_TTL_MS).exec();
    return new DayQuotaSpentError(country, 'spent', day.end);
  }

  /** The day's count and limits of a country, as every process sees them. */
  async day(country: Country, at: number): Promise<DayStatus> {
    const limits = this.limits(country, at);
    const fields = await this.deps.redis.hmget(this.deps.keys(country, limits.day.key).day, ...DAY_FIELDS);
    return this.#dayOf(country, limits, fields);
  }

  /**
   * Whether a forced update may be queued in the country now, read in one round trip: the
   * breaker (the upstream refuses the country) and the day's count, whose limits the caller checks.
   */
  async admission(country: Country, at: number): Promise<Admission> {
    const limits = this.limits(country, at);
    const k = this.deps.keys(country, limits.day.key);
    // Both keys carry the country's tag: one slot, one pipeline, on a cluster too.
    const replies = await this.deps.redis
      .pipeline()
      .hmget(k.breaker, 'kind', 'reason', 'probe_at')
      .hmget(k.day, ...DAY_FIELDS)
      .exec();
    const [breaker, day] = (replies ?? []).map(([err, value]) => {
      if (err) throw err;
      return value as (string | null)[];
    });
    const [kind, reason, probeAt] = breaker ?? [];
    const refused = kind === null || kind === undefined ? undefined : { reason: reason ?? '', probeAt: Number(probeAt) };
    return { refused, day: await this.#dayOf(country, limits, day ?? []) };
  }

  async #dayOf(country: Country, limits: DayLimits, fields: readonly (string | null | undefined)[]): Promise<DayStatus> {
    const q = this.deps.quota(country);
    const [inRedis, od, im, cr, spent, waitMs] = fields.map((f) => f ?? null);
    // Not counted in Redis yet today (or Redis lost it): the MongoDB copy is what the next permit starts from.
    const copy = inRedis === null ? await this.deps.usage.read(country, limits.day.key) : undefined;
    const total = copy ? copy.calls : Number(inRedis);
    const used = {
      forced: copy ? copy.forced : Number(od ?? 0),
      import: copy ? copy.imports : Number(im ?? 0),
      crawl: copy ? copy.crawls : Number(cr ?? 0),
    };
    return {
      country,
      day: limits.day,
      limit: q.perDay,
      used: total,
      forcedUsed: used.forced,
      scheduledLimit: limits.scheduled,
      forcedLimit: limits.own.forced,
      classes: {
        forced: { used: used.forced, limit: limits.own.forced },
        import: { used: used.import, limit: limits.own.import },
        crawl: { used: used.crawl, limit: limits.own.crawl },
      },
      spent: spent !== null,
      meanWaitMs: total > 0 && waitMs !== null ? Number(waitMs) / total : 0,
    };
  }
}
