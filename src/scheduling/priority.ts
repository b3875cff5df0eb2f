import type { Connection, Types } from 'mongoose';
import mongoose from 'mongoose';
import type { Config } from '../../config/env.js';
import { productModel } from '../models/product.js';
import { watchModel } from '../models/watch.js';
import { isDuplicateKey } from '../db/mongo.js';
import { nextRefreshAt } from './change-rate.js';

type Priority = 0 | 1;

/**
 * The priority of what a user did not name by ASIN: the ASINs an EAN import adds to a watchlist,
 * and the products a browse crawl finds that nobody watches. They refresh behind every product a
 * user asked for at priority 1.
 */
export const FOUND_PRIORITY: Priority = 0;

/** The accounts a product keeps as its owners, at most: enough that no one account can crowd the others out of it. */
export const OWNERS_KEPT = 8;

/** The highest priority among the watchers of each ASIN; ASINs nobody watches are absent. */
export async function effectivePriorities(conn: Connection, asins: readonly string[]): Promise<Map<string, Priority>> {
  return new Map([...(await watchersOf(conn, asins))].map(([asin, w]) => [asin, w.priority]));
}

/**
 * Each watched ASIN's effective priority (the highest among its watchers) and its owners: its
 * watchers, the most urgent and the oldest first, OWNERS_KEPT at most. ASINs nobody watches are absent.
 */
export async function watchersOf(
  conn: Connection,
  asins: readonly string[],
): Promise<Map<string, { priority: Priority; owners: Types.ObjectId[] }>> {
  const rows = await watchModel(conn).aggregate<{ _id: string; priority: number; owners: Types.ObjectId[] }>([
    // Aggregation pipelines are not sanitised by mongoose; this filter is ours alone.
    { $match: { kind: 'asin', key: { $in: [...asins] } } },
    { $sort: { key: 1, priority: -1, created_at: 1 } },
    { $group: { _id: '$key', priority: { $max: '$priority' }, owners: { $push: '$user_id' } } },
  ]);
  return new Map(rows.map((r) => [r._id, { priority: r.priority === 1 ? 1 : 0, owners: r.owners.slice(0, OWNERS_KEPT) }]));
}

function sameOwners(a: readonly Types.ObjectId[] | undefined, b: readonly Types.ObjectId[]): boolean {
  return (a?.length ?? 0) === b.length && b.every((o, i) => String(a![i]) === String(o));
}

/**
 * Brings the products of `asins` in line with their watchers, in every configured country, so
 * that the scheduler sees a watch change at once. Returns how many products it made due now.
 * - a newly watched ASIN gets a product (status pending) that is due now;
 * - a priority change moves the next refresh to the last attempt plus the new interval (the
 *   priority's, or under adaptive scheduling the one its change rate gives within it; so a raise
 *   to 1 can make it due at once);
 * - an ASIN nobody watches any more keeps its record but leaves the schedule.
 */
export async function applyWatchChange(
  conn: Connection,
  config: Pick<Config, 'countries' | 'refresh'>,
  asins: readonly string[],
  now = new Date(),
  attempt = 0,
): Promise<number> {
  if (asins.length === 0) return 0;
  const watchers = await watchersOf(conn, asins);
  const priorities = new Map([...watchers].map(([asin, w]) => [asin, w.priority]));
  const products = productModel(conn);
  const existing = await products
    .find({ asin: mongoose.trusted({ $in: [...asins] }), country: mongoose.trusted({ $in: [...config.countries] }) })
    .select({ country: 1, asin: 1, priority: 1, last_attempt_at: 1, change_rate: 1, owners: 1 })
    .lean();
  const byKey = new Map(existing.map((p) => [`${p.country}:${p.asin}`, p]));

  const ops: Parameters<typeof products.bulkWrite>[0] = [];
  let dueNow = 0;
  for (const asin of asins) {
    const priority = priorities.get(asin) ?? null;
    const owners = watchers.get(asin)?.owners ?? [];
    for (const country of config.countries) {
      const current = byKey.get(`${country}:${asin}`);
      if (priority === null) {
        if (current && current.priority !== null) {
          const next_refresh_at = nextRefreshAt({ why: 'unwatched' });
          ops.push({ updateOne: { filter: { country, asin }, update: { $set: { priority: null, next_refresh_at, owners: [] } } } });
        }
        continue;
      }
      if (!current) {
        dueNow++;
        ops.push({
          updateOne: {
            filter: { country, asin },
            update: {
              $setOnInsert: { created_at: now, status: 'pending' },
              $set: { priority, next_refresh_at: nextRefreshAt({ why: 'first-watched', now }), owners },
            },
            upsert: true,
          },
        });
      } else if (current.priority !== priority) {
        const next_refresh_at = nextRefreshAt({
          why: 'reprioritised',
          config,
          priority,
          lastAttemptAt: current.last_attempt_at ?? null,
          changeRate: current.change_rate ?? null,
          now,
        })!;
        if (next_refresh_at.getTime() <= now.getTime()) dueNow++;
        ops.push({ updateOne: { filter: { country, asin }, update: { $set: { priority, next_refresh_at, owners } } } });
      } else if (!sameOwners(current.owners, owners)) {
        ops.push({ updateOne: { filter: { country, asin }, update: { $set: { owners } } } });
      }
    }
  }
  if (ops.length === 0) return 0;
  try {
    await products.bulkWrite(ops, { ordered: false });
  } catch (err) {
    // Two requests inserting the same product race into the unique index; the loser reads again,
    // now seeing the winner's document, and applies its change as an update.
    if (isDuplicateKey(err) && attempt < MAX_PASSES) return applyWatchChange(conn, config, asins, now, attempt + 1);
    throw err;
  }
  // A change to the same ASIN by another request may have read the watchers before ours and
  // written after us. Reading the watchers again after our write closes that gap: whichever
  // request writes last re-reads last, so the stored priority ends as the watchers say.
  const after = await effectivePriorities(conn, asins);
  const stale = asins.some((a) => (after.get(a) ?? null) !== (priorities.get(a) ?? null));
  if (stale && attempt < MAX_PASSES) return dueNow + (await applyWatchChange(conn, config, asins, now, attempt + 1));
  return dueNow;
}

/** Passes before giving up on a hot ASIN; each pass converges unless watchers keep changing. */
const MAX_PASSES = 3;
