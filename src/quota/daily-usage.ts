import type { Connection } from 'mongoose';
import type { Country } from '../catalog/identifiers.js';
import { quotaUsageModel } from '../models/quota-usage.js';
import type { Lane } from './lanes.js';

export interface DayCount {
  /** Upstream calls of the day, every kind of work. */
  readonly calls: number;
  /** Of them, on-demand calls (forced updates, EAN resolves). */
  readonly onDemand: number;
}

/**
 * The MongoDB copy of the day's upstream calls per country. The quota governor counts every permit
 * in Redis, atomically with the pace; this copy outlives Redis, so after a flush or a restart
 * without AOF the governor starts the day's count from here instead of from zero and the day's
 * quota is not spent twice.
 *
 * Writes are not awaited by the call they count: a call must not wait for a MongoDB that is cut or
 * black-holed. A lost increment only lets the copy lag behind Redis, whose count wins while it lasts.
 */
export class DailyUsage {
  readonly #pending = new Set<Promise<unknown>>();

  constructor(private readonly mongo: Connection) {}

  record(country: Country, day: string, lane: Lane, calls = 1): void {
    const inc = lane === 'ondemand' ? { calls, od_calls: calls } : { calls };
    const write = quotaUsageModel(this.mongo)
      .updateOne({ _id: `${country}:${day}` }, { $inc: inc, $setOnInsert: { country, day } }, { upsert: true })
      .catch(() => undefined)
      .finally(() => this.#pending.delete(write));
    this.#pending.add(write);
  }

  /** Resolves when the copies of the calls recorded so far are written (or given up). */
  async settled(): Promise<void> {
    await Promise.all([...this.#pending]);
  }

  async read(country: Country, day: string): Promise<DayCount> {
    const doc = await quotaUsageModel(this.mongo).findById(`${country}:${day}`).lean();
    return { calls: doc?.calls ?? 0, onDemand: doc?.od_calls ?? 0 };
  }
}
