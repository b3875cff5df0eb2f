import type { Connection } from 'mongoose';
import type { Country } from '../catalog/identifiers.js';
import { quotaUsageModel } from '../models/quota-usage.js';
import type { QuotaClass } from './classes.js';

export interface DayCount {
  /** Upstream calls of the day, every kind of work. */
  readonly calls: number;
  /** Of them, forced updates'. */
  readonly onDemand: number;
  /** Of them, EAN imports'. */
  readonly imports: number;
  /** Of them, browse crawls'. */
  readonly crawls: number;
}

/** The MongoDB field that counts a class's own calls, beside `calls`. */
const OWN_FIELD: Readonly<Record<QuotaClass, 'od_calls' | 'import_calls' | 'crawl_calls' | null>> = {
  ondemand: 'od_calls',
  import: 'import_calls',
  refresh: null,
  crawl: 'crawl_calls',
};

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

  record(country: Country, day: string, cls: QuotaClass, calls = 1): void {
    const own = OWN_FIELD[cls];
    const inc = own ? { calls, [own]: calls } : { calls };
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
    return { calls: doc?.calls ?? 0, onDemand: doc?.od_calls ?? 0, imports: doc?.import_calls ?? 0, crawls: doc?.crawl_calls ?? 0 };
  }
}
