import type { Redis } from 'ioredis';
import type { Connection } from 'mongoose';
import type { Country } from '../catalog/identifiers.js';
import { quotaUsageModel } from '../models/quota-usage.js';

const DAY_MS = 86_400_000;

/** The upstream's daily quota is counted per UTC day. */
export function dayOf(now: Date): string {
  return now.toISOString().slice(0, 10);
}

export function msLeftInDay(now: Date): number {
  return DAY_MS - (now.getTime() % DAY_MS);
}

/**
 * Upstream calls made today, per country, shared by every worker process. The planner reads it to
 * spread the rest of the day's quota over the rest of the day. Counted twice: in Redis (read on
 * every plan) and in MongoDB (kept when Redis loses its data). Both count the same calls, so the
 * higher of the two is the truth as far as either knows.
 *
 * The MongoDB increment is not awaited: every upstream call records itself, and it must not wait
 * for a MongoDB that is cut or black-holed. A lost increment only lets the copy lag behind Redis,
 * whose count wins while it lasts.
 */
export class DailyUsage {
  readonly #pending = new Set<Promise<unknown>>();

  constructor(private readonly redis: Redis, private readonly prefix: string, private readonly mongo: Connection) {}

  private key(country: Country, now: Date): string {
    return `${this.prefix}:quota:${country}:${dayOf(now)}`;
  }

  async record(country: Country, calls = 1, now = new Date()): Promise<void> {
    const key = this.key(country, now);
    const day = dayOf(now);
    const copy = quotaUsageModel(this.mongo)
      .updateOne({ _id: `${country}:${day}` }, { $inc: { calls }, $setOnInsert: { country, day } }, { upsert: true })
      .catch(() => undefined)
      .finally(() => this.#pending.delete(copy));
    this.#pending.add(copy);
    await this.redis.multi().incrby(key, calls).pexpire(key, 2 * DAY_MS).exec();
  }

  /** Resolves when the MongoDB copies of the calls recorded so far are written (or given up). */
  async settled(): Promise<void> {
    await Promise.all([...this.#pending]);
  }

  async used(country: Country, now = new Date()): Promise<number> {
    const [inRedis, inMongo] = await Promise.allSettled([
      this.redis.get(this.key(country, now)),
      quotaUsageModel(this.mongo).findById(`${country}:${dayOf(now)}`).lean(),
    ]);
    if (inRedis.status === 'rejected' && inMongo.status === 'rejected') throw inRedis.reason;
    const redisCalls = inRedis.status === 'fulfilled' ? Number(inRedis.value ?? 0) : 0;
    const mongoCalls = inMongo.status === 'fulfilled' ? inMongo.value?.calls ?? 0 : 0;
    return Math.max(redisCalls, mongoCalls);
  }
}

/**
 * Requests a second the planner may spend now: the per-second quota, or the rest of the day's
 * quota spread evenly over the rest of the day, whichever is lower.
 */
export function sustainableRate(quota: { perSecond: number; perDay: number }, usedToday: number, now: Date): number {
  const left = Math.max(0, quota.perDay - usedToday);
  return Math.min(quota.perSecond, left / (msLeftInDay(now) / 1_000));
}
