import mongoose, { type Connection, type Types } from 'mongoose';
import type { Country } from '../core/identifiers.js';
import { productModel } from '../models/product.js';
import { nextRefreshAt } from './next-refresh.js';

/**
 * Claims on due products. A product is due when its next refresh time has passed; a plan (or a
 * batch filling its call again) claims due products by moving that time a lease ahead and writing
 * its token, so two claims racing for the same products each get a disjoint share.
 */

export function dueFilterOf(country: Country, now: Date) {
  return { country, next_refresh_at: mongoose.trusted({ $lte: now }) };
}

/**
 * Products of a country due for refresh and not yet planned (the backlog kept in MongoDB), by
 * priority, each counted up to `upTo` at most: a planner asks only whether more is due than it can
 * take, so the count walks a bounded stretch of the plan index whatever the backlog.
 */
export async function countDue(mongo: Connection, country: Country, now = new Date(), upTo?: number): Promise<{ p1: number; p0: number }> {
  const products = productModel(mongo);
  const dueFilter = dueFilterOf(country, now);
  const options = upTo === undefined ? {} : { limit: upTo };
  const [p1, p0] = await Promise.all([
    products.countDocuments({ ...dueFilter, priority: 1 }, options),
    products.countDocuments({ ...dueFilter, priority: 0 }, options),
  ]);
  return { p1, p0 };
}

type Picked = { _id: Types.ObjectId; asin: string; priority: 0 | 1 | null; next_refresh_at: Date | null };

/**
 * Claims picked products with a lease: only products still due move, so of two passes racing for
 * the same products each gets a disjoint share (one document's update is atomic). The lease
 * outlasts a job's whole retry schedule; work lost with Redis comes back when it ends. Returns the
 * ones this claim got, in the order picked.
 */
export async function claimProducts<T extends Picked>(
  mongo: Connection,
  country: Country,
  picked: readonly T[],
  now: Date,
  leaseUntil: number,
  token: string,
): Promise<T[]> {
  const products = productModel(mongo);
  // By the shard key (country, ASIN), not by _id: on a sharded cluster the claim goes to the shards
  // that hold these products, not to all of them.
  const mine = { country, asin: mongoose.trusted({ $in: picked.map((p) => p.asin) }) };
  await products.updateMany(
    { ...mine, next_refresh_at: mongoose.trusted({ $lte: now }) },
    { $set: { next_refresh_at: nextRefreshAt({ why: 'claimed', until: new Date(leaseUntil) }), plan_token: token } },
  );
  const claimed = new Set(
    (
      await products
        .find({ ...mine, plan_token: token })
        .select({ asin: 1 })
        .lean()
    ).map((p) => p.asin),
  );
  return picked.filter((p) => claimed.has(p.asin));
}

/**
 * Claims up to `n` more due products, most urgent first, under an existing claim: a batch that lost
 * products to a forced update fills its call again (the call is the scarce unit, not the ASIN). A
 * priority-1 batch takes only priority-1 products: a priority-0 one would overtake the priority-1
 * batches still queued.
 */
export async function claimMoreDue(
  mongo: Connection,
  country: Country,
  n: number,
  leaseMs: number,
  token: string,
  onlyPriority1: boolean,
  now = new Date(),
): Promise<string[]> {
  if (n <= 0) return [];
  const picked = await productModel(mongo)
    .find({ ...dueFilterOf(country, now), ...(onlyPriority1 ? { priority: 1 } : {}) })
    .sort({ priority: -1, next_refresh_at: 1 })
    .limit(n)
    .select({ asin: 1, priority: 1, next_refresh_at: 1 })
    .lean();
  if (!picked.length) return [];
  return (await claimProducts(mongo, country, picked, now, now.getTime() + leaseMs, token)).map((p) => p.asin);
}
