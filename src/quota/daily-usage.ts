import type { Redis } from 'ioredis';
import type { Country } from '../catalog/identifiers.js';

const DAY_MS = 86_400_000;

/** The upstream's daily quota is counted per UTC day. */
export function dayOf(now: Date): string {
  return now.toISOString().slice(0, 10);
}

export function msLeftInDay(now: Date): number {
  return DAY_MS - (now.getTime() % DAY_MS);
}

/**
 * Upstream calls made today, per country, counted in Redis so that every worker process shares one
 * count. The planner reads it to spread the rest of the day's quota over the rest of the day.
 */
export class DailyUsage {
  constructor(private readonly redis: Redis, private readonly prefix: string) {}

  private key(country: Country, now: Date): string {
    return `${this.prefix}:quota:${country}:${dayOf(now)}`;
  }

  async record(country: Country, calls = 1, now = new Date()): Promise<void> {
    const key = this.key(country, now);
    await this.redis.multi().incrby(key, calls).pexpire(key, 2 * DAY_MS).exec();
  }

  async used(country: Country, now = new Date()): Promise<number> {
    return Number((await this.redis.get(this.key(country, now))) ?? 0);
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
