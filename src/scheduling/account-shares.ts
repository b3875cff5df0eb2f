import mongoose, { Types, type Connection } from 'mongoose';
import pLimit from 'p-limit';
import type { Redis } from '../db/redis.js';
import type { Country } from '../core/identifiers.js';
import { productModel } from '../models/product.js';
import { userModel } from '../models/user.js';
import { dueFilterOf } from './claims.js';
import type { DueProduct } from './pick-due.js';
import { countryTag } from '../db/redis-keys.js';

/** Accounts a planning pass looks at, at most: the rest come in the next passes, in turn. */
export const ACCOUNTS_PER_PASS = 200;
/** Accounts' due products read at once. */
const READS_AT_ONCE = 8;

const FIELDS = { asin: 1, priority: 1, next_refresh_at: 1, last_attempt_at: 1, change_rate: 1 } as const;

/**
 * When a country is short of quota (more is due than a pass may plan), each account first gets its
 * fair share of the pass: its weight's share of the slots, taken from the due products it owns
 * (most urgent first: priority 1, then the most overdue), and only then does the rest of the pass
 * follow the scheduler's global order. So an account whose products alone would fill the quota (a
 * thousand priority-1 products on short adaptive intervals, or a crawl's worth of new ones) takes
 * the slots the others leave, not theirs: the others keep their intervals, and its own stretch.
 * With quota to spare nobody is short and this is not asked.
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
  const total = accounts.reduce((n, a) => n + weight(a), 0);
  // Each account's share of the slots, at least one; with more accounts than slots, the first in turn.
  let left = slots;
  const quanta: { id: Types.ObjectId; n: number }[] = [];
  for (const a of accounts) {
    if (left <= 0) break;
    const n = Math.min(left, Math.max(1, Math.floor((slots * weight(a)) / total)));
    quanta.push({ id: a._id, n });
    left -= n;
  }
  // The next pass starts after the last account served, not the last read: with fewer slots than
  // accounts, those the slots did not reach come first next time instead of never.
  await deps.redis.set(cursorKey, String(quanta.at(-1)!.id), 'PX', 86_400_000);
  const due = dueFilterOf(country, now);
  const limit = pLimit(READS_AT_ONCE);
  const products = productModel(deps.mongo);
  const shares = await Promise.all(
    quanta.map((q) =>
      limit(() =>
        products
          .find({ ...due, owners: q.id })
          .sort({ priority: -1, next_refresh_at: 1 })
          .hint('plan_owner')
          .limit(q.n)
          .select(FIELDS)
          .lean<DueProduct[]>(),
      ),
    ),
  );
  const seen = new Set<string>();
  return shares.flat().filter((p) => {
    const id = String(p._id);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}
