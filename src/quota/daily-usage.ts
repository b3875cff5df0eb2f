import type { Connection } from 'mongoose';
import type { Country } from '../core/identifiers.js';
import { quotaUsageModel } from '../models/quota-usage.js';
import type { QuotaClass } from '../core/quota-classes.js';
import { withTimeout } from '../db/mongo.js';

export interface DayCount {
  /** Upstream calls of the day, every kind of work. */
  readonly calls: number;
  /** Of them, forced updates'. */
  readonly forced: number;
  /** Of them, EAN imports'. */
  readonly imports: number;
  /** Of them, browse crawls'. */
  readonly crawls: number;
}

/** The MongoDB field that counts a class's own calls, beside `calls`. */
const OWN_FIELD: Readonly<Record<QuotaClass, 'od_calls' | 'import_calls' | 'crawl_calls' | null>> = {
  forced: 'od_calls',
  import: 'import_calls',
  refresh: null,
  crawl: 'crawl_calls',
};

/** How long counted calls wait to be copied together: one write a second per country, not one per call. */
const FLUSH_MS = 1_000;
/** How long closing waits for the last copies (a MongoDB that is away does not hold shutdown). */
const SETTLE_MS = 2_000;

/**
 * The MongoDB copy of the day's upstream calls per country. The quota governor counts every permit
 * in Redis, atomically with the pace; this copy outlives Redis, so after a flush or a restart
 * without AOF the governor starts the day's count from here instead of from zero and the day's
 * quota is not spent twice.
 *
 * Writes are not awaited by the call they count: a call must not wait for a MongoDB that is cut or
 * black-holed. Calls are added up and copied once per FLUSH_MS per country and day (a call's
 * round trip to MongoDB would cost more than the refresh's own writes), and the rest when the
 * process closes. A lost increment only lets the copy lag behind Redis, whose count wins while it
 * lasts.
 */
export class DailyUsage {
  readonly #pending = new Set<Promise<unknown>>();
  readonly #counted = new Map<string, { country: Country; day: string; inc: Record<string, number> }>();
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly mongo: Connection) {}

  record(country: Country, day: string, cls: QuotaClass, calls = 1): void {
    const key = `${country}:${day}`;
    let entry = this.#counted.get(key);
    if (!entry) this.#counted.set(key, (entry = { country, day, inc: {} }));
    entry.inc.calls = (entry.inc.calls ?? 0) + calls;
    const own = OWN_FIELD[cls];
    if (own) entry.inc[own] = (entry.inc[own] ?? 0) + calls;
    if (!this.#timer) {
      this.#timer = setTimeout(() => this.#flush(), FLUSH_MS);
      this.#timer.unref();
    }
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const [key, { country, day, inc }] of this.#counted) {
      const write = quotaUsageModel(this.mongo)
        .updateOne({ _id: key }, { $inc: inc, $setOnInsert: { country, day } }, { upsert: true })
        .catch(() => undefined)
        .finally(() => this.#pending.delete(write));
      this.#pending.add(write);
    }
    this.#counted.clear();
  }

  /** Copies the calls counted so far and resolves when they are written (or given up, or after SETTLE_MS). */
  async settled(): Promise<void> {
    this.#flush();
    await withTimeout(Promise.all([...this.#pending]), SETTLE_MS, 'quota usage copy').catch(() => undefined);
  }

  async read(country: Country, day: string): Promise<DayCount> {
    const doc = await quotaUsageModel(this.mongo).findById(`${country}:${day}`).lean();
    return { calls: doc?.calls ?? 0, forced: doc?.od_calls ?? 0, imports: doc?.import_calls ?? 0, crawls: doc?.crawl_calls ?? 0 };
  }
}
