import { Types, type Connection } from 'mongoose';
import { LRUCache } from 'lru-cache';
import { userModel } from '../models/user.js';
import { OBJECT_ID_RE } from '../db/mongo.js';

/** Accounts whose weight a process keeps at once. */
const CACHED = 10_000;

/**
 * Each account's weight in fair sharing, for the producers that act for an account without its
 * request at hand (the scheduler's crawls, a batch's webhook deliveries). Read from the account and
 * kept for `ttlMs`, so an operator's change reaches every process within that time; an account that
 * no longer exists weighs 1.
 */
export class AccountWeights {
  readonly #cache: LRUCache<string, number>;

  constructor(
    private readonly conn: Connection,
    ttlMs = 60_000,
  ) {
    this.#cache = new LRUCache({ max: CACHED, ttl: ttlMs });
  }

  async of(userId: string): Promise<number> {
    const cached = this.#cache.get(userId);
    if (cached !== undefined) return cached;
    if (!OBJECT_ID_RE.test(userId)) return 1;
    const user = await userModel(this.conn).findById(new Types.ObjectId(userId)).select({ share_weight: 1 }).maxTimeMS(5_000).lean();
    const weight = user?.share_weight ?? 1;
    this.#cache.set(userId, weight);
    return weight;
  }

  /** Sets an account's weight; false when there is no such account. */
  async set(userId: Types.ObjectId, weight: number): Promise<boolean> {
    const res = await userModel(this.conn).updateOne({ _id: userId }, { $set: { share_weight: weight } }, { runValidators: true });
    this.#cache.delete(userId.toHexString());
    return res.matchedCount > 0;
  }
}
