import type { Connection } from 'mongoose';
import mongoose from 'mongoose';
import type { Config } from '../../config/env.js';
import type { Country } from '../catalog/identifiers.js';
import { productModel } from '../models/product.js';
import { MAX_ITEMS_PER_CALL } from '../upstream/port.js';
import { refreshIntervalMs } from './change-rate.js';
import type { RefreshPolicies, StoredPolicy } from './policy-store.js';
import { weightOf } from './refresh-objective.js';
import {
  BUCKETS_PER_OCTAVE,
  FIRST_BOOST,
  nextBoost,
  rateOfBucket,
  tunePolicy,
  type RateCount,
  type TuneInput,
  type TunedPolicy,
} from './tune-policy.js';

/** How often a country's policy is tuned again: estimates move slowly, and a tuning reads every estimate. */
export const TUNE_EVERY_MS = 10 * 60_000;
const HOUR_MS = 3_600_000;

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
          _id: { p: '$priority', b: { $round: [{ $multiply: [BUCKETS_PER_OCTAVE, { $log: ['$change_rate', 2] }] }, 0] } },
          n: { $sum: 1 },
        },
      },
    ])
    .hint('plan_rate');
  const out = { p0: [] as RateCount[], p1: [] as RateCount[] };
  for (const r of rows) (r._id.p === 1 ? out.p1 : out.p0).push({ rate: rateOfBucket(r._id.b), count: r.n });
  return out;
}

/** Products with an estimate, by effective priority and rate. */
export interface RateHistogram {
  readonly p0: readonly RateCount[];
  readonly p1: readonly RateCount[];
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
  const tuned = tunePolicy({ ...input, boost });
  if (!tuned) return last;
  await ctx.policies.write(country, { ...tuned, boost }, now);
  return tuned;
}
