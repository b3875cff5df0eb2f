import mongoose, { Types, type Connection } from 'mongoose';
import pLimit from 'p-limit';
import type { Redis } from '../db/redis.js';
import type { Country } from '../core/identifiers.js';
import { productModel } from '../models/product.js';
import { userModel } from '../models/user.js';
import { dueFilterOf } from './claims.js';
import type { DueProduct } from './pick-due.js';
import { countryTag } from '../db/redis-keys.js';
import { MAX_ITEMS_PER_CALL } from '../upstream/port.js';

/** Accounts a planning pass looks at, at most: the rest come in the next passes, in turn. */
export const ACCOUNTS_PER_PASS = 200;
/**
 * Passes' shares an account may carry: products come due together (an account's batch is refreshed
 * in one call), so an account under its share over a few passes may ask for more than one pass's.
 */
const CARRY_SHARES = 2;
/** Accounts' due products read at once. */
const READS_AT_ONCE = 8;

const FIELDS = { asin: 1, priority: 1, next_refresh_at: 1, last_attempt_at: 1, change_rate: 1 } as const;

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
        .select(FIELDS)
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
