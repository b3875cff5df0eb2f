import mongoose, { type Connection, type Types } from 'mongoose';
import { accountCounterModel } from '../models/account-counter.js';
import { isDuplicateKey } from '../db/mongo.js';

/** Reservations tried before a request is refused: enough for a seed and a race with another one. */
const RESERVE_TRIES = 4;

/** Counts what an account holds of one kind, from the collection itself (seeds a missing counter). */
export type CountOf = (userId: Types.ObjectId) => Promise<number>;

/**
 * Per-account counters that make a cap hold under concurrent requests: a request reserves a unit
 * before it writes (one conditional `$inc`, which only one of two racing requests can win at the
 * cap), and releases it when its write fails or the thing is deleted. A count-then-insert lets
 * every concurrent request see room and insert. Each field is generic (`alerts`, `browse_watches`,
 * …); a field seeds itself once from `countOf[field]`, so existing accounts start at their real
 * count.
 *
 * A process that dies between a reservation and its write leaves the counter one high; the cap is
 * then that much lower for the account until `resync` runs.
 */
export class AccountCounters<F extends string> {
  constructor(
    private readonly conn: Connection,
    private readonly countOf: Readonly<Record<F, CountOf>>,
  ) {}

  private get counters() {
    return accountCounterModel(this.conn);
  }

  /**
   * Takes one unit of `field` for the account if it holds fewer than `max`: true when taken, false
   * at the cap (nothing changed). `max` 0 means no cap: nothing is counted.
   */
  async reserve(userId: Types.ObjectId, field: F, max: number): Promise<boolean> {
    if (max <= 0) return true;
    for (let tries = 0; tries < RESERVE_TRIES; tries++) {
      const taken = await this.counters.updateOne({ _id: userId, [field]: mongoose.trusted({ $lt: max }) }, { $inc: { [field]: 1 } });
      if (taken.modifiedCount === 1) return true;
      // Not taken: at the cap, or no counter yet when the update ran. A counter below the cap now
      // was seeded by a concurrent request meanwhile: try again; none yet: seed it and try again.
      const now = await this.value(userId, field);
      if (now === undefined) await this.seed(userId, field);
      else if (now >= max) return false;
    }
    return false;
  }

  /** Gives back a unit of `field` (a failed write, a deletion). Never below 0; nothing when unseeded. */
  async release(userId: Types.ObjectId, field: F): Promise<void> {
    await this.counters.updateOne({ _id: userId, [field]: mongoose.trusted({ $gt: 0 }) }, { $inc: { [field]: -1 } });
  }

  /** The counter as it stands; undefined while unseeded. */
  async value(userId: Types.ObjectId, field: F): Promise<number | undefined> {
    const doc = await this.counters
      .findById(userId)
      .select({ [field]: 1 })
      .lean();
    const v = doc?.[field];
    return typeof v === 'number' ? v : undefined;
  }

  /** Sets the counter to the real count again (an operator's repair after a crash left it high). */
  async resync(userId: Types.ObjectId, field: F): Promise<number> {
    const n = await this.countOf[field](userId);
    await this.counters.updateOne({ _id: userId }, { $set: { [field]: n } }, { upsert: true });
    return n;
  }

  /**
   * Sets an absent counter from the real count. Only where the field is absent: a concurrent seed
   * (or a reservation after it) that got there first is kept, and this count, possibly stale, is
   * dropped. The upsert inserts when the account has no document; when it has one whose field is
   * already set, the filter misses, the insert collides on `_id`, and that collision means "seeded".
   */
  private async seed(userId: Types.ObjectId, field: F): Promise<void> {
    const n = await this.countOf[field](userId);
    try {
      await this.counters.updateOne(
        { _id: userId, [field]: mongoose.trusted({ $exists: false }) },
        { $set: { [field]: n } },
        { upsert: true },
      );
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
  }
}
