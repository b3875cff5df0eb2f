import mongoose, { type Connection, type Types } from 'mongoose';
import type { Config } from '../../config/env.js';
import { watchModel, type WatchDoc, type WatchFields } from '../models/watch.js';
import { productModel } from '../models/product.js';
import { nextRefreshAt } from '../scheduling/change-rate.js';
import { ValidationError } from '../core/errors.js';
import { isDuplicateKey } from '../db/mongo.js';
import { findPage, type Page } from '../db/page.js';

type Priority = 0 | 1;

/**
 * The priority of what a user did not name by ASIN: the ASINs an EAN import adds to a watchlist,
 * and the products a browse crawl finds that nobody watches. They refresh behind every product a
 * user asked for at priority 1.
 */
export const FOUND_PRIORITY: Priority = 0;

/** The accounts a product keeps as its owners, at most: enough that no one account can crowd the others out of it. */
export const OWNERS_KEPT = 8;

/**
 * A user's watchlist: ASINs (with priority) and browse nodes. EAN imports are ean-imports.ts. A
 * change to its ASINs reaches their products at once (applyWatchChange), so the planner sees it.
 */
export class WatchService {
  constructor(
    private readonly conn: Connection,
    private readonly config: Pick<Config, 'countries' | 'refresh' | 'accounts'>,
    /** Called when a change made products due now, so a scheduler plans without waiting for its tick. */
    private readonly onDue: () => void = () => undefined,
  ) {}

  private async changed(asins: readonly string[]): Promise<void> {
    if ((await applyWatchChange(this.conn, this.config, asins)) > 0) this.onDue();
  }

  private get watches() {
    return watchModel(this.conn);
  }

  /** The user's entries, newest first, one page of them and how many there are. */
  async list(userId: Types.ObjectId, q: { kind?: 'asin' | 'browse'; page: number; limit: number }): Promise<Page<WatchFields>> {
    return findPage(this.watches, { user_id: userId, ...(q.kind ? { kind: q.kind } : {}) }, { created_at: -1, _id: -1 }, q);
  }

  /**
   * Adds the ASIN or changes its priority; tells whether the entry was created. Refuses (422) what
   * would take the account past its caps, before writing anything.
   */
  async watchAsin(
    userId: Types.ObjectId,
    asin: string,
    priority: 0 | 1,
    source: 'api' | 'ean' = 'api',
  ): Promise<{ entry: WatchDoc; created: boolean }> {
    await this.checkAsinCaps(userId, asin, priority);
    const res = await this.upsertEntry(userId, 'asin', asin, { priority }, source);
    await this.changed([asin]);
    return res;
  }

  /**
   * ACCOUNT_MAX_WATCHES bounds new entries, ACCOUNT_MAX_P1_WATCHES raises to priority 1; lowering a
   * priority or re-sending the one an entry has is always allowed. Both counts run on index
   * prefixes of the account's own entries. The check comes before the write, so concurrent adds of
   * one account may each pass and leave it a few over: the caps keep accounts fair, and a few
   * entries more do not change that, while a transaction for every add would cost every account.
   */
  private async checkAsinCaps(userId: Types.ObjectId, asin: string, priority: 0 | 1): Promise<void> {
    const { maxWatches, maxP1Watches } = this.config.accounts;
    const checkP1 = priority === 1 && maxP1Watches > 0;
    if (maxWatches === 0 && !checkP1) return;
    const current = await this.watches.findOne({ user_id: userId, kind: 'asin', key: asin }).select({ priority: 1 }).lean();
    const errors: Record<string, string[]> = {};
    if (!current && maxWatches > 0 && (await this.watches.countDocuments({ user_id: userId, kind: 'asin' })) >= maxWatches) {
      errors.asin = [`You may watch at most ${maxWatches} ASINs (ACCOUNT_MAX_WATCHES).`];
    }
    if (
      checkP1 &&
      current?.priority !== 1 &&
      (await this.watches.countDocuments({ user_id: userId, kind: 'asin', priority: 1 })) >= maxP1Watches
    ) {
      errors.priority = [`You may watch at most ${maxP1Watches} ASINs at priority 1 (ACCOUNT_MAX_P1_WATCHES).`];
    }
    if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  }

  /**
   * Adds ASINs found by an import at priority 0, leaving entries the user already has as they are.
   * The import itself never fails on ACCOUNT_MAX_WATCHES: it adds the ASINs that fit, in the
   * upstream's order, and returns those it left out. Two countries' jobs of one import may run at
   * once and both see the same room, leaving the account a few over, as with concurrent adds.
   */
  async watchFoundAsins(userId: Types.ObjectId, asins: readonly string[]): Promise<string[]> {
    const found = [...new Set(asins)];
    if (found.length === 0) return [];
    let add = found;
    let leftOut: string[] = [];
    const { maxWatches } = this.config.accounts;
    if (maxWatches > 0) {
      const have = await this.watches
        .find({ user_id: userId, kind: 'asin', key: mongoose.trusted({ $in: found }) })
        .select({ key: 1 })
        .lean();
      const haveKeys = new Set(have.map((w) => w.key));
      const fresh = found.filter((a) => !haveKeys.has(a));
      const room = Math.max(0, maxWatches - (await this.watches.countDocuments({ user_id: userId, kind: 'asin' })));
      add = fresh.slice(0, room);
      leftOut = fresh.slice(room);
    }
    if (add.length > 0) await this.addFound(userId, add);
    // Left-out ASINs too: a product only this import would have watched stays off the schedule.
    await this.changed(found);
    return leftOut;
  }

  private async addFound(userId: Types.ObjectId, asins: readonly string[]): Promise<void> {
    await this.watches
      .bulkWrite(
        asins.map((asin) => ({
          updateOne: {
            filter: { user_id: userId, kind: 'asin' as const, key: asin },
            update: { $setOnInsert: { priority: FOUND_PRIORITY, source: 'ean' as const, last_crawl_at: null, last_crawl_count: null } },
            upsert: true,
          },
        })),
        { ordered: false },
      )
      .catch((err: unknown) => {
        if (!isDuplicateKey(err)) throw err;
      });
  }

  /** Watches the ASIN at priority 0 unless the user watches it already (at whatever priority). */
  async ensureAsinWatched(userId: Types.ObjectId, asin: string): Promise<void> {
    if (await this.watches.exists({ user_id: userId, kind: 'asin', key: asin })) return;
    await this.watchAsin(userId, asin, 0);
  }

  async unwatchAsin(userId: Types.ObjectId, asin: string): Promise<WatchDoc | null> {
    const removed = await this.watches.findOneAndDelete({ user_id: userId, kind: 'asin', key: asin });
    if (removed) await this.changed([asin]);
    return removed;
  }

  /**
   * Adds a browse node; past ACCOUNT_MAX_BROWSE_WATCHES a new one is refused (422) before anything
   * is written, while re-sending a node the account watches is always allowed. As with ASINs,
   * concurrent adds of one account may each pass the count and leave it a few over.
   */
  async watchBrowse(userId: Types.ObjectId, nodeId: string): Promise<{ entry: WatchDoc; created: boolean }> {
    const { maxBrowseWatches } = this.config.accounts;
    if (
      maxBrowseWatches > 0 &&
      !(await this.watches.exists({ user_id: userId, kind: 'browse', key: nodeId })) &&
      (await this.watches.countDocuments({ user_id: userId, kind: 'browse' })) >= maxBrowseWatches
    ) {
      throw new ValidationError({ browse: [`You may watch at most ${maxBrowseWatches} browse nodes (ACCOUNT_MAX_BROWSE_WATCHES).`] });
    }
    return this.upsertEntry(userId, 'browse', nodeId, {}, 'api');
  }

  async unwatchBrowse(userId: Types.ObjectId, nodeId: string): Promise<WatchDoc | null> {
    return this.watches.findOneAndDelete({ user_id: userId, kind: 'browse', key: nodeId });
  }

  private async upsertEntry(
    userId: Types.ObjectId,
    kind: 'asin' | 'browse',
    key: string,
    set: { priority?: 0 | 1 },
    source: 'api' | 'ean',
  ): Promise<{ entry: WatchDoc; created: boolean }> {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.watches.findOneAndUpdate(
          { user_id: userId, kind, key },
          { $set: set, $setOnInsert: { source, last_crawl_at: null, last_crawl_count: null } },
          { upsert: true, returnDocument: 'after', includeResultMetadata: true },
        );
        return { entry: res.value!, created: res.lastErrorObject?.updatedExisting === false };
      } catch (err) {
        // Two concurrent adds of one entry: the loser finds the winner's entry on its second try.
        if (isDuplicateKey(err) && attempt === 0) continue;
        throw err;
      }
    }
  }
}

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
