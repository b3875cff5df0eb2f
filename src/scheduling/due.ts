import mongoose, { Types, type Connection } from 'mongoose';
import pLimit from 'p-limit';
import type { Config } from '../../config/env.js';
import type { Redis } from '../db/redis.js';
import type { Country } from '../core/identifiers.js';
import { productModel } from '../models/product.js';
import { userModel } from '../models/user.js';
import { countryTag } from '../db/redis-keys.js';
import { MAX_ITEMS_PER_CALL } from '../upstream/port.js';
import { nextRefreshAt } from './change-rate.js';
import { refreshIndex, type RefreshPolicy } from './refresh-objective.js';

/**
 * What is due, and who gets it. A product is due when its next refresh time has passed. A planning
 * step counts what is due (countDue), reads it in the scheduler's order (pickDue) and, short of
 * quota, each account's fair share of it first (pickAccountShares); it then claims what it takes
 * by moving that time a lease ahead and writing its token (claimProducts), so two claims racing for
 * the same products each get a disjoint share. A batch that lost products fills its call again
 * under its claim (claimMoreDue).
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

export interface DueProduct {
  _id: Types.ObjectId;
  asin: string;
  priority: 0 | 1 | null;
  next_refresh_at: Date | null;
  last_attempt_at: Date | null;
  change_rate: number | null;
  sched_rate?: number | null;
}

const DUE_FIELDS = { asin: 1, priority: 1, next_refresh_at: 1, last_attempt_at: 1, change_rate: 1, sched_rate: 1 } as const;

/**
 * Candidates read per product the pass can take, under adaptive scheduling: enough that the
 * fastest-changing due products and the most overdue ones are both weighed, few enough that a
 * pass reads a bounded number of keys whatever the backlog.
 */
const WINDOW_PER_SLOT = 3;
const WINDOW_MIN = 100;
// Each window is one command: at most a planning step's 1,000 documents.
const WINDOW_MAX = 1_000;
/**
 * A wait of this share of priority 0's interval goes first, whatever the product is worth: the
 * rest of the interval is the room that absorbs a burst of products coming due together (those
 * first seen together, at a cold start), so none waits past the interval itself.
 */
export const LATE_SHARE = 0.9;

/** Before a country's policy is tuned, due products are ranked by changes seen (w = 0). */
const UNTUNED: Pick<RefreshPolicy, 'weight' | 'evenHours'> = { weight: 0, evenHours: 1 };

/** The bounded windows of due priority-0 products a pass weighs (see pickDue). */
export interface P0Windows {
  /** The fastest-changing first (plan_rate). */
  readonly fastest: readonly DueProduct[];
  /** The most overdue first (plan_due). */
  readonly oldest: readonly DueProduct[];
  /** Seen LATE_SHARE of priority 0's interval ago or longer, longest ago first (plan_stale). */
  readonly stale: readonly DueProduct[];
}

/** Candidates read per product the pass can take: enough to weigh both ends, few enough to bound a pass. */
export function windowSize(room: number): number {
  return Math.min(WINDOW_MAX, Math.max(WINDOW_MIN, room * WINDOW_PER_SLOT));
}

/**
 * Up to `room` of the windows' products, in the order to refresh them: first those whose wait has
 * reached LATE_SHARE of priority 0's interval (a guarantee, whatever they are worth), most overdue first; then by
 * the policy's index now (src/scheduling/refresh-objective.ts), a product never refreshed first.
 */
export function chooseP0(
  windows: P0Windows,
  room: number,
  policy: Pick<RefreshPolicy, 'weight' | 'evenHours'> | null,
  maxMs: number,
  now: Date,
): DueProduct[] {
  const t = now.getTime();
  const late = windows.stale
    .filter((p) => p.last_attempt_at !== null && t - p.last_attempt_at.getTime() >= LATE_SHARE * maxMs)
    .slice(0, room);
  const seen = new Set<string>(late.map((p) => p.asin));
  const candidates = [...windows.fastest, ...windows.oldest, ...windows.stale].filter((p) => {
    if (seen.has(p.asin)) return false;
    seen.add(p.asin);
    return true;
  });
  const ranking = policy ?? UNTUNED;
  const ranked = candidates
    .map((p) => ({ p, v: refreshIndex(ranking, p.sched_rate ?? p.change_rate, p.last_attempt_at && t - p.last_attempt_at.getTime()) }))
    .sort(
      (a, b) =>
        b.v - a.v ||
        (b.p.change_rate ?? 0) - (a.p.change_rate ?? 0) ||
        (a.p.next_refresh_at?.getTime() ?? 0) - (b.p.next_refresh_at?.getTime() ?? 0),
    );
  return [...late, ...ranked.slice(0, room - late.length).map((r) => r.p)];
}

/**
 * Up to `n` due products of a country in the order the scheduler should refresh them, priority 1
 * first. Under `fixed` scheduling, the most overdue first (the plan_due index's order). Under
 * `adaptive`, priority 1 keeps that order (its interval is a guarantee), and priority 0 is chosen by
 * chooseP0 among three bounded windows of the due products: the fastest-changing (plan_rate), the
 * most overdue (plan_due) and those seen longest ago (plan_stale), ranked by the country's tuned policy (`policy`; null before one is tuned).
 */
export async function pickDue(
  mongo: Connection,
  config: Pick<Config, 'refresh'>,
  country: Country,
  n: number,
  now: Date,
  policy: Pick<RefreshPolicy, 'weight' | 'evenHours'> | null = null,
): Promise<DueProduct[]> {
  if (n <= 0) return [];
  const products = productModel(mongo);
  const due = dueFilterOf(country, now);
  if (config.refresh.scheduling === 'fixed') {
    return products.find(due).sort({ priority: -1, next_refresh_at: 1 }).limit(n).select(DUE_FIELDS).lean<DueProduct[]>();
  }
  const p1 = await products
    .find({ ...due, priority: 1 })
    .sort({ priority: -1, next_refresh_at: 1 })
    .limit(n)
    .select(DUE_FIELDS)
    .lean<DueProduct[]>();
  const room = n - p1.length;
  if (room === 0) return p1;
  const window = windowSize(room);
  const p0 = { ...due, priority: 0 as const };
  const maxMs = config.refresh.intervalMs[0];
  // Only products seen LATE_SHARE of the interval ago can be late: the walk of plan_stale stops
  // there, rather than passing every product seen long ago but not due (nobody watches it, or its
  // interval is longer), which would grow with the catalogue.
  const stale = { ...p0, last_attempt_at: mongoose.trusted({ $lte: new Date(now.getTime() - LATE_SHARE * maxMs) }) };
  const [fastest, oldest, late] = await Promise.all([
    products.find(p0).sort({ priority: -1, change_rate: -1 }).hint('plan_rate').limit(window).select(DUE_FIELDS).lean<DueProduct[]>(),
    products.find(p0).sort({ priority: -1, next_refresh_at: 1 }).hint('plan_due').limit(window).select(DUE_FIELDS).lean<DueProduct[]>(),
    products
      .find(stale)
      .sort({ priority: -1, last_attempt_at: 1 })
      .hint('plan_stale')
      .limit(window)
      .select(DUE_FIELDS)
      .lean<DueProduct[]>(),
  ]);
  return [...p1, ...chooseP0({ fastest, oldest, stale: late }, room, policy, maxMs, now)];
}

/**
 * Priority-0 products not yet due that a step with calls to spare refreshes early, soonest due
 * first (the plan_due index's order: under a tuned policy, those whose index is nearest its price),
 * none seen within REFRESH_MIN_INTERVAL nor held by a claim. A call left unspent is lost (the
 * planner's credit holds a horizon, not a backlog), and under `changes` the refreshes come due
 * unevenly enough to leave 3–4 % of the calls unspent though the policy asks for more than the
 * budget (bench:adaptive). At most windowSize(n) entries of the index are read.
 */
export async function pickAhead(
  mongo: Connection,
  config: Pick<Config, 'refresh'>,
  country: Country,
  n: number,
  now: Date,
): Promise<DueProduct[]> {
  if (n <= 0) return [];
  const seenBy = now.getTime() - config.refresh.minIntervalMs;
  const ahead = await productModel(mongo)
    .find({ country, priority: 0, next_refresh_at: mongoose.trusted({ $gt: now }) })
    .sort({ priority: -1, next_refresh_at: 1 })
    .hint('plan_due')
    .limit(windowSize(n))
    .select({ ...DUE_FIELDS, plan_token: 1 })
    .lean<(DueProduct & { plan_token?: string | null })[]>();
  return ahead.filter((p) => !p.plan_token && p.last_attempt_at !== null && p.last_attempt_at.getTime() <= seenBy).slice(0, n);
}

/** Accounts a planning pass looks at, at most: the rest come in the next passes, in turn. */
export const ACCOUNTS_PER_PASS = 200;
/**
 * Passes' shares an account may carry: products come due together (an account's batch is refreshed
 * in one call), so an account under its share over a few passes may ask for more than one pass's.
 */
const CARRY_SHARES = 2;
/** Accounts' due products read at once. */
const READS_AT_ONCE = 8;

// No sched_rate: an account's share is taken most urgent first, never ranked by the policy.
const SHARE_FIELDS = { asin: 1, priority: 1, next_refresh_at: 1, last_attempt_at: 1, change_rate: 1 } as const;

/**
 * When a country is short of quota (more is due than a pass may plan, or than a backlogged refresh
 * queue will run before the next pass: planner.ts), each account first gets its fair share of the
 * pass, taken from the due products it owns (most urgent first: priority 1, then the most overdue):
 * its weight's share of the slots plus what it left of the last passes' shares (up to CARRY_SHARES
 * of them), fitted to the slots by waterFill, so that what an account leaves goes to those asking
 * for more; only then does the rest of the pass follow the scheduler's global order. So an account
 * whose products alone would fill the quota (a thousand priority-1 products on short adaptive
 * intervals, or a crawl's worth of new ones) takes the slots the others leave, not theirs: the
 * others keep their intervals, and its own stretch. With quota to spare nobody is short and this is
 * not asked.
 *
 * Accounts are visited in turn, ACCOUNTS_PER_PASS a pass, from a cursor kept in Redis, so a pass
 * reads a bounded number of index ranges however many accounts there are; with more accounts than
 * that, or than the pass has slots, each one's share comes round once every few passes.
 */
export async function pickAccountShares(
  deps: { readonly mongo: Connection; readonly redis: Redis; readonly redisPrefix: string },
  country: Country,
  slots: number,
  now: Date,
  keepSlots?: number,
): Promise<DueProduct[]> {
  if (slots <= 0) return [];
  const cursorKey = `${countryTag(deps.redisPrefix, country)}:plan:accounts`;
  const cursor = await deps.redis.get(cursorKey);
  const users = userModel(deps.mongo);
  const page = (after: string | null, n: number) =>
    users
      .find(after ? { _id: mongoose.trusted({ $gt: new Types.ObjectId(after) }) } : {})
      .sort({ _id: 1 })
      .limit(n)
      .select({ share_weight: 1 })
      .lean();
  let accounts = await page(cursor, ACCOUNTS_PER_PASS);
  if (cursor && accounts.length < ACCOUNTS_PER_PASS) {
    const seen = new Set(accounts.map((a) => String(a._id)));
    accounts = [...accounts, ...(await page(null, ACCOUNTS_PER_PASS - accounts.length)).filter((a) => !seen.has(String(a._id)))];
  }
  if (accounts.length === 0) return [];

  const weight = (a: (typeof accounts)[number]): number => a.share_weight ?? 1;
  const due = dueFilterOf(country, now);
  const limit = pLimit(READS_AT_ONCE);
  const products = productModel(deps.mongo);
  const read = (id: Types.ObjectId, n: number) =>
    limit(() =>
      products
        .find({ ...due, owners: id })
        .sort({ priority: -1, next_refresh_at: 1 })
        .hint('plan_owner')
        .limit(n)
        .select(SHARE_FIELDS)
        .lean<DueProduct[]>(),
    );

  let shares: DueProduct[][];
  if (slots < accounts.length && keepSlots === undefined) {
    // One slot each, in turn: the next pass starts after the last account served, not the last
    // read, so those the slots did not reach come first next time instead of never.
    const served = accounts.slice(0, slots);
    await deps.redis.set(cursorKey, String(served.at(-1)!._id), 'PX', 86_400_000);
    shares = await Promise.all(served.map((a) => read(a._id, 1)));
  } else {
    await deps.redis.set(cursorKey, String(accounts.at(-1)!._id), 'PX', 86_400_000);
    const total = accounts.reduce((n, a) => n + weight(a), 0);
    const ids = accounts.map((a) => String(a._id));
    const carryKey = `${countryTag(deps.redisPrefix, country)}:plan:carry`;
    const carried = await deps.redis.hmget(carryKey, ...ids);
    // Each account's allowance: its weight's share of this pass and what it left of the last ones,
    // up to CARRY_SHARES of them or its weight's part of `keepSlots`, whichever is more.
    const shareOf = accounts.map((a) => (slots * weight(a)) / total);
    const keepOf = accounts.map((a, i) => Math.max(CARRY_SHARES * shareOf[i]!, ((keepSlots ?? 0) * weight(a)) / total));
    const allowance = shareOf.map((share, i) => share + Math.min(keepOf[i]!, Number(carried[i] ?? 0) || 0));
    // Due products up to the allowance and one batch more: enough to see who asks for less, and
    // for an account whose products came due together to take what the others leave of the pass.
    const lists = await Promise.all(accounts.map((a, i) => read(a._id, Math.floor(allowance[i]!) + MAX_ITEMS_PER_CALL)));
    const taken = waterFill(
      lists.map((l) => l.length),
      allowance,
      slots,
    );
    shares = lists.map((l, i) => l.slice(0, taken[i]));
    const carry = allowance.map((x, i) => Math.min(keepOf[i]!, x - taken[i]!));
    const kept = ids.flatMap((id, i) => (carry[i]! > 0 ? [id, carry[i]!.toFixed(3)] : []));
    const spent = ids.filter((_, i) => !(carry[i]! > 0));
    const tx = deps.redis.multi();
    if (kept.length) tx.hset(carryKey, ...kept);
    if (spent.length) tx.hdel(carryKey, ...spent);
    await tx.pexpire(carryKey, 86_400_000).exec();
  }
  const seen = new Set<string>();
  return shares.flat().filter((p) => {
    const id = String(p._id);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/**
 * Max-min fair shares of `slots` (water-filling): an account that asks for less than its weight's
 * share gets all it asks, and what it leaves is shared by the others in proportion to their weights.
 * Weighted by allowances, an account that kept part of its last shares takes it before one that
 * asks for more than it has.
 */
export function waterFill(asks: readonly number[], weights: readonly number[], slots: number): number[] {
  const order = asks.map((_, i) => i).sort((a, b) => asks[a]! / weights[a]! - asks[b]! / weights[b]!);
  const given = asks.map(() => 0);
  let left = slots;
  let weightLeft = weights.reduce((n, w) => n + w, 0);
  for (const i of order) {
    if (left <= 0) break;
    const share = Math.max(1, Math.floor((left * weights[i]!) / weightLeft));
    given[i] = Math.min(asks[i]!, share, left);
    left -= given[i]!;
    weightLeft -= weights[i]!;
  }
  return given;
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
  dueBy: Date = now,
): Promise<T[]> {
  const products = productModel(mongo);
  // By the shard key (country, ASIN), not by _id: on a sharded cluster the claim goes to the shards
  // that hold these products, not to all of them.
  const mine = { country, asin: mongoose.trusted({ $in: picked.map((p) => p.asin) }) };
  // `dueBy` past `now` takes products picked ahead (pickAhead) as well; one claimed meanwhile has
  // its lease's end, past `dueBy`, and stays with its claim.
  await products.updateMany(
    { ...mine, next_refresh_at: mongoose.trusted({ $lte: dueBy }) },
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
