import type { Connection } from 'mongoose';
import mongoose from 'mongoose';
import type { Config } from '../../config/env.js';
import type { Country } from '../core/identifiers.js';
import { productModel } from '../models/product.js';
import { userModel } from '../models/user.js';
import { overAllowances, type AccountDemand } from './account-allowances.js';
import { MAX_ITEMS_PER_CALL } from '../upstream/port.js';
import { refreshIntervalMs } from './change-rate.js';
import { FIT_MIN_LOOKS, fitGroupModel, type RateCell } from './rate-groups.js';
import { RATE_FEATURES, UNKNOWN_LEVEL, type RateLevels } from '../core/rate-levels.js';
import type { RefreshPolicies, StoredPolicy } from './policy-store.js';
import { weightOf } from './refresh-objective.js';
import {
  BUCKETS_PER_OCTAVE,
  FIRST_BOOST,
  nextBoost,
  rateOfBucket,
  tunePolicy,
  type CappedAccount,
  type RateCount,
  type TuneInput,
  type TunedPolicy,
} from './tune-policy.js';

/** How often a country's policy is tuned again: estimates move slowly, and a tuning reads every estimate. */
export const TUNE_EVERY_MS = 10 * 60_000;
const HOUR_MS = 3_600_000;
/**
 * Accounts past their fair part whose demand a tuning caps, the furthest past first: each is one
 * more histogram in every step of the price's bisection. Past this many, the rest count in full,
 * as every account did before caps (a price a little higher than fair for the others).
 */
export const MAX_CAPPED = 16;
/** Accounts' weights read at once. */
const WEIGHTS_AT_ONCE = 1_000;

const bucketExpr = { $round: [{ $multiply: [BUCKETS_PER_OCTAVE, { $log: ['$change_rate', 2] }] }, 0] };
/** A product with several owners is one refresh for all of them: each owner counts its share. */
const ownerShare = { $divide: [1, { $max: [1, { $size: { $ifNull: ['$owners', []] } }] }] };

export interface TuneContext {
  readonly config: Pick<Config, 'refresh'>;
  readonly mongo: Connection;
  readonly policies: RefreshPolicies;
}

/** Products with an estimate, by effective priority and rate bucket: one grouped pass over the estimates. */
async function rateHistogram(mongo: Connection, country: Country): Promise<RateHistogram> {
  const rows = await productModel(mongo)
    .aggregate<{ _id: { p: 0 | 1; b: number }; n: number }>([
      { $match: { country, priority: mongoose.trusted({ $in: [0, 1] }), change_rate: mongoose.trusted({ $gt: 0 }) } },
      {
        $group: {
          _id: { p: '$priority', b: bucketExpr },
          n: { $sum: 1 },
        },
      },
    ])
    .hint('plan_rate');
  const out = { p0: [] as RateCount[], p1: [] as RateCount[] };
  for (const r of rows) (r._id.p === 1 ? out.p1 : out.p0).push({ rate: rateOfBucket(r._id.b), count: r.n });
  return out;
}

/**
 * Priority 0's estimates that rest on FIT_MIN_LOOKS looks or more, by what the products' answers
 * told of them (rate-groups.ts): one grouped pass, at most a cell per combination of levels.
 * Products written before their levels were kept are one cell of unknowns.
 */
async function rateCells(mongo: Connection, country: Country): Promise<RateCell[]> {
  const rows = await productModel(mongo)
    .aggregate<{ _id: Partial<RateLevels> | null; n: number; sum: number; sumSq: number }>([
      {
        $match: {
          country,
          priority: 0,
          change_rate: mongoose.trusted({ $gt: 0 }),
          [`rate_obs.${FIT_MIN_LOOKS - 1}`]: mongoose.trusted({ $exists: true }),
        },
      },
      { $project: { rate_levels: 1, l: { $ln: '$change_rate' } } },
      { $group: { _id: '$rate_levels', n: { $sum: 1 }, sum: { $sum: '$l' }, sumSq: { $sum: { $multiply: ['$l', '$l'] } } } },
    ])
    .hint('plan_rate');
  return rows.map((r) => ({
    levels: Object.fromEntries(RATE_FEATURES.map((f) => [f, r._id?.[f] ?? UNKNOWN_LEVEL])) as RateLevels,
    n: r.n,
    sum: r.sum,
    sumSq: r.sumSq,
  }));
}

/** Products with an estimate, by effective priority and rate. */
export interface RateHistogram {
  readonly p0: readonly RateCount[];
  readonly p1: readonly RateCount[];
}

/** Priority 0's products with an estimate per owning account (a shared product split between its owners). */
async function productsByOwner(mongo: Connection, country: Country): Promise<Map<string, number>> {
  const rows = await productModel(mongo)
    .aggregate<{ _id: unknown; n: number }>([
      { $match: { country, priority: 0, change_rate: mongoose.trusted({ $gt: 0 }) } },
      { $project: { owners: 1, n: ownerShare } },
      { $unwind: '$owners' },
      { $group: { _id: '$owners', n: { $sum: '$n' } } },
    ])
    .hint('plan_rate');
  return new Map(rows.map((r) => [String(r._id), r.n]));
}

async function weightsOf(mongo: Connection, ids: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let i = 0; i < ids.length; i += WEIGHTS_AT_ONCE) {
    const users = await userModel(mongo)
      .find({ _id: mongoose.trusted({ $in: ids.slice(i, i + WEIGHTS_AT_ONCE).map((id) => new mongoose.Types.ObjectId(id)) }) })
      .select({ share_weight: 1 })
      .lean();
    for (const u of users) out.set(String(u._id), u.share_weight ?? 1);
  }
  return out;
}

/** The rate histograms of some accounts' priority-0 products (a shared product split between its owners). */
async function histogramsOf(mongo: Connection, country: Country, ids: readonly string[]): Promise<Map<string, RateCount[]>> {
  const owners = mongoose.trusted({ $in: ids.map((id) => new mongoose.Types.ObjectId(id)) });
  const rows = await productModel(mongo)
    .aggregate<{ _id: { o: unknown; b: number }; n: number }>([
      { $match: { country, owners, priority: 0, change_rate: mongoose.trusted({ $gt: 0 }) } },
      { $project: { owners: 1, b: bucketExpr, n: ownerShare } },
      { $unwind: '$owners' },
      { $match: { owners } },
      { $group: { _id: { o: '$owners', b: '$b' }, n: { $sum: '$n' } } },
    ])
    .hint('plan_owner');
  const out = new Map<string, RateCount[]>();
  for (const r of rows) {
    const id = String(r._id.o);
    out.set(id, [...(out.get(id) ?? []), { rate: rateOfBucket(r._id.b), count: r.n }]);
  }
  return out;
}

/**
 * The accounts whose priority-0 products, all at REFRESH_MIN_INTERVAL, would ask for more than their
 * fair part of `budgetPerHour` (account-allowances.ts), MAX_CAPPED at most, with their histograms.
 */
export async function cappedAccounts(
  deps: { readonly config: Pick<Config, 'refresh'>; readonly mongo: Connection },
  country: Country,
  budgetPerHour: number,
): Promise<CappedAccount[]> {
  const counts = await productsByOwner(deps.mongo, country);
  const weights = await weightsOf(deps.mongo, [...counts.keys()]);
  const demands: AccountDemand[] = [...counts].map(([id, n]) => ({
    id,
    weight: weights.get(id) ?? 1,
    perHour: (n * HOUR_MS) / deps.config.refresh.minIntervalMs,
  }));
  const over = overAllowances(demands, budgetPerHour).slice(0, MAX_CAPPED);
  if (over.length === 0) return [];
  const histograms = await histogramsOf(
    deps.mongo,
    country,
    over.map((a) => a.id),
  );
  return over.map((a) => ({ rates: histograms.get(a.id) ?? [], perHour: a.perHour }));
}

/**
 * What a tuning weighs: priority 0 gets what `callsPerSecond` leaves once priority 1's refreshes
 * (each at its interval from its own rate) are counted.
 */
export function tuneInputOf(config: Pick<Config, 'refresh'>, rates: RateHistogram, callsPerSecond: number): TuneInput {
  const p1PerHour = rates.p1.reduce((sum, r) => sum + (r.count * HOUR_MS) / refreshIntervalMs(config, 1, r.rate), 0);
  return {
    rates: rates.p0,
    budgetPerHour: callsPerSecond * MAX_ITEMS_PER_CALL * 3_600 - p1PerHour,
    minMs: config.refresh.minIntervalMs,
    maxMs: config.refresh.intervalMs[0],
    weight: weightOf(config.refresh.objective, config.refresh.balance),
  };
}

/**
 * Tunes the country's policy again when the last tuning is older than TUNE_EVERY_MS. Returns the policy in force (null under fixed scheduling or with nothing to
 * tune from yet).
 */
export async function tuneCountry(
  ctx: TuneContext,
  country: Country,
  callsPerSecond: number,
  now = Date.now(),
): Promise<StoredPolicy | TunedPolicy | null> {
  if (ctx.config.refresh.scheduling === 'fixed') return null;
  const last = await ctx.policies.read(country, now, true);
  if (last && now - last.at < TUNE_EVERY_MS) return last;
  if (!(callsPerSecond > 0)) return last;
  const input = tuneInputOf(ctx.config, await rateHistogram(ctx.mongo, country), callsPerSecond);
  const boost = last ? nextBoost(last.boost, (last.planned * HOUR_MS) / Math.max(1, now - last.at), input.budgetPerHour) : FIRST_BOOST;
  const capped = input.budgetPerHour > 0 ? await cappedAccounts(ctx, country, input.budgetPerHour * boost) : [];
  const tuned = tunePolicy({ ...input, boost, capped });
  if (!tuned) return last;
  const policy = { ...tuned, groups: fitGroupModel(await rateCells(ctx.mongo, country)) };
  await ctx.policies.write(country, { ...policy, boost }, now);
  return policy;
}
