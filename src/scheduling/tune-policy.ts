/**
 * Tuning a country's refresh policy (refresh-objective.ts) from the distribution of its products'
 * estimated change rates: the price μ at which priority 0's refreshes, each at the interval its
 * index takes to reach μ, spend exactly the calls the day allows them; and, for `balanced` left on
 * `auto`, the least freshness weight whose predicted freshness keeps most (KEEP_GAIN) of the gain
 * over an even share that the freshness policy predicts (the even share: every product at the same
 * interval, which is what fixed intervals spending those calls give).
 * The prediction is the steady state of the Poisson model with the estimates as rates; the planner
 * tunes again every REFRESH_TUNE_EVERY, so estimates that move take the policy with them.
 */
import { hoursToPrice, type RefreshPolicy } from './refresh-objective.js';

/** Products of priority 0 whose estimate falls in one bucket, and the bucket's rate (per hour). */
export interface RateCount {
  readonly rate: number;
  readonly count: number;
}

/** Buckets per doubling of the rate: the rates a tuning sees are within 9 % of the estimates. */
export const BUCKETS_PER_OCTAVE = 4;

/** The bucket of a rate, and its representative rate. */
export function bucketOf(ratePerHour: number): number {
  return Math.round(BUCKETS_PER_OCTAVE * Math.log2(Math.max(ratePerHour, 1e-9)));
}
export function rateOfBucket(bucket: number): number {
  return 2 ** (bucket / BUCKETS_PER_OCTAVE);
}

export interface TuneInput {
  /** Priority 0's products with an estimate, by rate. */
  readonly rates: readonly RateCount[];
  /** Refreshes an hour priority 0 may spend. */
  readonly budgetPerHour: number;
  readonly minMs: number;
  /** Priority 0's interval: no product waits longer. */
  readonly maxMs: number;
  /** Freshness's weight; null: the least that keeps the even share's freshness. */
  readonly weight: number | null;
  /** The refreshes asked for, as a multiple of the budget (nextBoost); 1 when absent. */
  readonly boost?: number;
  /**
   * Accounts whose products ask for more than their fair part of the (boosted) budget
   * (account-allowances.ts): their products, also counted in `rates`, and the refreshes an hour
   * their part allows. The price is tuned to what the others ask for plus these parts, so one
   * account's catalogue does not stretch every other account's intervals.
   */
  readonly capped?: readonly CappedAccount[];
}

export interface CappedAccount {
  readonly rates: readonly RateCount[];
  readonly perHour: number;
}

export interface Prediction {
  /** Share of the time a product's stored value is current, over priority 0's products. */
  readonly freshness: number;
  /** Changes seen an hour. */
  readonly changesPerHour: number;
  readonly refreshesPerHour: number;
}

export interface TunedPolicy extends RefreshPolicy {
  readonly predicted: Prediction;
  /** The same calls shared evenly. */
  readonly even: Prediction;
}

const HOUR_MS = 3_600_000;
const PRICE_ROUNDS = 48;
/** Halvings of the weight's interval: to within 0.001, then rounded up to the hundredth. */
const WEIGHT_ROUNDS = 10;
/**
 * The share of the predicted freshness gain `balanced` keeps. The estimates after a few looks are
 * noisy, and a policy tuned on them realises less freshness than it predicts; bench:adaptive (four
 * drifts, three seeds) found the even share's freshness kept from about 0.8 of the predicted gain
 * up, and lost below it.
 */
const KEEP_GAIN = 0.8;

function intervalHours(policy: RefreshPolicy, rate: number, minH: number, maxH: number): number {
  return Math.min(maxH, Math.max(minH, hoursToPrice(policy, rate)));
}

/** Freshness and changes seen of products refreshed every `hours(rate)`. */
function predict(rates: readonly RateCount[], hours: (rate: number) => number): Prediction {
  let fresh = 0;
  let changes = 0;
  let refreshes = 0;
  let n = 0;
  for (const { rate, count } of rates) {
    const tau = hours(rate);
    const x = rate * tau;
    const seen = -Math.expm1(-x);
    fresh += count * (x < 1e-9 ? 1 : seen / x);
    changes += (count * seen) / tau;
    refreshes += count / tau;
    n += count;
  }
  return { freshness: n ? fresh / n : 1, changesPerHour: changes, refreshesPerHour: refreshes };
}

/** The price at which the products' refreshes spend the budget, for a weight. */
function priceFor(input: TuneInput, weight: number, evenHours: number): RefreshPolicy {
  const budget = input.budgetPerHour * (input.boost ?? 1);
  const minH = input.minMs / HOUR_MS;
  const maxH = input.maxMs / HOUR_MS;
  const demand = (price: number): number => {
    const policy = { price, weight, evenHours };
    const of = (rates: readonly RateCount[]) => rates.reduce((sum, r) => sum + r.count / intervalHours(policy, r.rate, minH, maxH), 0);
    let total = of(input.rates);
    for (const c of input.capped ?? []) {
      const asked = of(c.rates);
      total -= asked - Math.min(asked, c.perHour);
    }
    return total;
  };
  // Demand falls as the price rises; bisect on its logarithm between bounds no catalogue reaches.
  let lo = -30;
  let hi = 10;
  if (demand(Math.exp(lo)) <= budget) return { price: Math.exp(lo), weight, evenHours };
  if (demand(Math.exp(hi)) >= budget) return { price: Math.exp(hi), weight, evenHours };
  for (let i = 0; i < PRICE_ROUNDS; i++) {
    const mid = (lo + hi) / 2;
    if (demand(Math.exp(mid)) > budget) lo = mid;
    else hi = mid;
  }
  // The end that asks for at least the budget: the planner ranks what is asked beyond it, while
  // calls left unspent are lost. Demand is continuous, so the ends agree, but for one cliff: in
  // floating point gain reaches 1 at about 37 changes, so no price below 1 asks a product to wait
  // longer than 37 of its changes, and at 1 every product waits the longest interval. A catalogue
  // that changes much faster than the budget can look ends the bisection on that edge.
  return { price: Math.exp(lo), weight, evenHours };
}

/** The tuned policy, or null when there is nothing to tune from (no estimate, no budget). */
export function tunePolicy(input: TuneInput): TunedPolicy | null {
  const n = input.rates.reduce((sum, r) => sum + r.count, 0);
  if (n === 0 || !(input.budgetPerHour > 0)) return null;
  const minH = input.minMs / HOUR_MS;
  const maxH = input.maxMs / HOUR_MS;
  const evenHours = Math.min(maxH, Math.max(minH, n / input.budgetPerHour));
  const even = predict(input.rates, () => evenHours);
  const tuned = (weight: number): TunedPolicy => {
    const policy = priceFor(input, weight, evenHours);
    return { ...policy, prior: input.rates, predicted: predict(input.rates, (rate) => intervalHours(policy, rate, minH, maxH)), even };
  };
  if (input.weight !== null) return tuned(input.weight);
  // Freshness grows with its weight. The prediction takes the estimates for the truth, and noisy
  // estimates lose part of what it promises (the even share loses nothing): the least weight that
  // keeps KEEP_GAIN of the freshness gain the freshness policy predicts, found by bisection.
  const best = tuned(1);
  const floor = even.freshness + KEEP_GAIN * Math.max(0, best.predicted.freshness - even.freshness);
  const changes = tuned(0);
  if (changes.predicted.freshness >= floor) return changes;
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < WEIGHT_ROUNDS; i++) {
    const mid = (lo + hi) / 2;
    if (tuned(mid).predicted.freshness >= floor) hi = mid;
    else lo = mid;
  }
  return tuned(Math.ceil(hi * 100) / 100);
}

/** The boost a country starts with: due products come in bursts and gaps, and a gap leaves calls unspent. */
export const FIRST_BOOST = 1.1;
const MAX_BOOST = 2;

/**
 * The next tuning's boost, from what the last period planned of priority 0 against its budget.
 * The prediction takes each product at the interval its estimate gives now; estimates move after
 * each refresh and due products arrive unevenly, so fewer are due than predicted and calls go
 * unspent: the boost asks for more until the plans use the budget, and eases off while they do
 * (the backlog it keeps is ranked by index, so asking a little too much costs little).
 */
export function nextBoost(previous: number, plannedPerHour: number, budgetPerHour: number): number {
  if (!(budgetPerHour > 0)) return previous;
  const used = plannedPerHour / budgetPerHour;
  const next = used >= 0.98 ? previous * 0.97 : previous * Math.min(1.25, 1 / Math.max(used, 0.5));
  return Math.min(MAX_BOOST, Math.max(1, next));
}
