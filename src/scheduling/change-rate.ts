/**
 * How often a product changes, learned from its own refreshes, and when to refresh it next.
 *
 * A refresh sees whether the price or availability moved since the last one, not how often: each
 * observation is (hours since the last, moved or not), and the product keeps its last WINDOW of
 * them, so a product that calms down or wakes up is followed within a window of refreshes. The estimate is
 * the most probable rate (Poisson changes, a Gamma prior) given those observations, found by EM: a
 * moved observation counts as x / (1 - e^-x) changes, x = rate · hours (the Poisson count given at
 * least one), and the rate is the counted changes over the hours, iterated to its fixed point. So a
 * product that moved at every refresh is estimated to change faster than once a refresh, and its
 * interval shrinks quickly; one that never moved is estimated slower at each refresh, and its
 * interval grows about threefold a refresh. The prior (half a change over half the prior hours,
 * fading as observations come) keeps the estimate finite and gives a product with no observation
 * its first interval: the geometric mean of the shortest and the longest, so a new product is
 * neither probed at the fastest pace nor left at the slowest.
 *
 * The next refresh comes when the country's tuned policy says a refresh is worth its price
 * (refresh-objective.ts), or, before a policy is tuned and for priority 1, when one change is
 * expected since the last (a 63 % chance that the value moved); within [REFRESH_MIN_INTERVAL, the
 * priority's interval].
 */
import type { Config } from '../../config/env.js';
import { hoursToPrice, type RefreshPolicy } from './refresh-objective.js';

export interface Observation {
  /** Hours since the observation before. */
  readonly hours: number;
  /** Whether the price, currency or availability moved meanwhile. */
  readonly changed: boolean;
}

/**
 * Observations a product keeps: enough that a week of looks still narrows the estimate (bench:adaptive's
 * posteriors after 3 and 7 days: 90th-percentile error 2.9× and 2.8× against 3.9× and 3.8× with 8),
 * few enough that a product whose activity moves is followed within a day or two of its looks.
 */
export const WINDOW = 16;
/** Changes expected since the last refresh when the next one comes. */
export const TARGET_CHANGES = 1;
/** The prior's weight, in changes (its hours are this share of the prior hours). */
const PRIOR_WEIGHT = 0.5;
const EM_ROUNDS = 40;
const HOUR_MS = 3_600_000;

type RefreshConfig = Pick<Config, 'refresh'>;

/** The prior's hours for a priority: a new product's first interval. */
export function priorHours(config: RefreshConfig, priority: 0 | 1): number {
  return Math.sqrt(config.refresh.minIntervalMs * config.refresh.intervalMs[priority]) / HOUR_MS;
}

/** The window after one more observation (the oldest leaves past WINDOW). */
export function withObservation(window: readonly Observation[], obs: Observation): Observation[] {
  return [...window, { hours: Math.max(0, obs.hours), changed: obs.changed }].slice(-WINDOW);
}

/** Estimated changes per hour, given the observations and the prior hours. */
export function estimateRate(window: readonly Observation[], prior: number): number {
  // The prior speaks for a new product and fades as observations come: with a full window, data
  // that says "faster than we look" can still push the estimate down to REFRESH_MIN_INTERVAL.
  const weight = PRIOR_WEIGHT / (1 + window.length);
  const hours = window.reduce((sum, o) => sum + o.hours, weight * prior);
  let rate = 1 / prior;
  for (let round = 0; round < EM_ROUNDS; round++) {
    let changes = weight;
    for (const o of window) {
      if (!o.changed) continue;
      const x = rate * o.hours;
      changes += x < 1e-9 ? 1 : x / -Math.expm1(-x);
    }
    const next = changes / hours;
    if (Math.abs(next - rate) <= 1e-9 * rate) return next;
    rate = next;
  }
  return rate;
}

/**
 * The interval to the next refresh: the priority's interval under `fixed`; under `adaptive`, for
 * priority 0 with a tuned policy, the time its index takes to reach the policy's price
 * (refresh-objective.ts), otherwise the time one change is expected in; within the bounds.
 */
export function refreshIntervalMs(
  config: RefreshConfig,
  priority: 0 | 1,
  ratePerHour: number | null,
  policy: RefreshPolicy | null = null,
): number {
  const max = config.refresh.intervalMs[priority];
  if (config.refresh.scheduling === 'fixed' || ratePerHour === null) return max;
  const min = config.refresh.minIntervalMs;
  const wanted =
    priority === 0 && policy !== null
      ? hoursToPrice(policy, ratePerHour) * HOUR_MS
      : ratePerHour > 0
        ? (TARGET_CHANGES / ratePerHour) * HOUR_MS
        : max;
  return Math.round(Math.min(max, Math.max(min, wanted)));
}

/**
 * Why a product's next refresh is being set. Every write of `next_refresh_at` names one of these and
 * takes its time from `nextRefreshAt`, so the policy of when a product is refreshed next lives here
 * alone (a test keeps the writers to it).
 */
export type NextRefresh =
  /** Nobody watches it any more: off the schedule. */
  | { readonly why: 'unwatched' }
  /** A new watch on a product never seen: due at once. */
  | { readonly why: 'first-watched'; readonly now: Date }
  /**
   * Its upstream answer was written (`changeRate`: the estimate the answer left, null when it was
   * not found or not accessible), or its priority changed: one interval of its priority (from its
   * change rate under adaptive scheduling) after its last attempt; at once when it was never tried.
   */
  | {
      readonly why: 'refreshed' | 'reprioritised';
      /** The refresh settings: the priorities' intervals and the scheduling mode. */
      readonly config: Pick<Config, 'refresh'>;
      readonly priority: 0 | 1 | null;
      readonly lastAttemptAt: Date | null;
      readonly changeRate: number | null;
      /** The country's tuned policy (adaptive scheduling), when there is one. */
      readonly policy?: RefreshPolicy | null;
      readonly now: Date;
    }
  /** Claimed by a plan or a forced update: out of the planner's sight until the lease ends. */
  | { readonly why: 'claimed'; readonly until: Date }
  /** A claim given back unrefreshed (the quota day was spent): due again when it was due. */
  | { readonly why: 'given-back'; readonly due: Date };

export function nextRefreshAt(next: NextRefresh): Date | null {
  switch (next.why) {
    case 'unwatched':
      return null;
    case 'first-watched':
      return next.now;
    case 'refreshed':
    case 'reprioritised': {
      if (next.priority === null) return null;
      if (next.lastAttemptAt === null) return next.now;
      return new Date(next.lastAttemptAt.getTime() + refreshIntervalMs(next.config, next.priority, next.changeRate, next.policy ?? null));
    }
    case 'claimed':
      return next.until;
    case 'given-back':
      return next.due;
  }
}

/**
 * The rate scheduling goes by: the posterior mean given the observations with the country's
 * distribution of estimates as the prior (empirical Bayes), each candidate rate weighed by how many
 * products have it and by the likelihood of the looks under it (moved: 1 − e^−λh; still: e^−λh).
 * A handful of looks says little of one product; the catalogue says which rates are common, so a
 * product's rate is pulled toward them as far as its own looks leave room. The prior comes from the
 * products' own estimates (estimateRate), never from these posteriors, which would narrow it at
 * every tuning. Null without a prior or an observation.
 */
export function posteriorRate(window: readonly Observation[], prior: readonly { rate: number; count: number }[]): number | null {
  if (window.length === 0 || prior.length === 0) return null;
  let best = -Infinity;
  const logs = prior.map(({ rate, count }) => {
    let log = Math.log(Math.max(count, 1e-300));
    for (const o of window) {
      const x = rate * o.hours;
      log += o.changed ? Math.log(Math.max(-Math.expm1(-x), 1e-300)) : -x;
    }
    if (log > best) best = log;
    return log;
  });
  let weight = 0;
  let sum = 0;
  prior.forEach(({ rate }, i) => {
    const w = Math.exp(logs[i]! - best);
    weight += w;
    sum += w * rate;
  });
  return weight > 0 ? sum / weight : null;
}
