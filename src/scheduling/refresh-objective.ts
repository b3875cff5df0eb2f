/**
 * What a refresh of a product is worth for the objective the operator chose (REFRESH_OBJECTIVE),
 * and when it is worth it: the index the planner ranks due products by, and the interval a written
 * product gets.
 *
 * A product changes as a Poisson process of rate λ (per hour, estimated in change-rate.ts) and is
 * refreshed every τ hours; x = λτ. Then (Cho & Garcia-Molina, "Effective page refresh policies",
 * ACM TODS 2003):
 * - a refresh sees a change with probability 1 − e^−x, so changes are seen at C = (1 − e^−x)/τ;
 * - the stored value is current for a share F = (1 − e^−x)/x of the time (its freshness).
 * Spending B refreshes an hour on many products, the Lagrangian optimum refreshes each at the
 * frequency f = 1/τ where the derivative of its objective in f equals one common price μ. Both
 * derivatives share the factor gain(x) = 1 − e^−x(1 + x):
 * - `changes`:   dC/df = gain(x)
 * - `freshness`: dF/df = gain(x) / λ
 * The index of a product last seen τ ago is that derivative now; a product is worth a refresh when
 * its index reaches μ. Weighing the two, w on freshness, with λ measured against the interval
 * every product would get if the calls were shared evenly (τ_u = products / B, so that both terms
 * are pure numbers that agree for a product changing once in τ_u):
 *   index = gain(λτ) · (w / (λ τ_u) + (1 − w)),
 * `changes` is w = 0, `freshness` w = 1, `balanced` a w between (REFRESH_BALANCE, or `auto`: the
 * least w whose predicted freshness is at least the even share's, i.e. as many changes as possible
 * without the catalogue less current than fixed intervals would keep it). The freshness index is
 * bounded by 1/λ: the fastest changers, which no affordable refresh keeps current, are given up
 * first, as Cho & Garcia-Molina found the freshness-optimal policy does; the priority's interval
 * still bounds every product's wait, so nothing is starved.
 *
 * The price and the weight are tuned per country from the distribution of the estimates (tune.ts)
 * and kept in a RefreshPolicy; without one (not tuned yet), a product is due when one change is
 * expected since its last refresh.
 */
import type { GroupModel } from './rate-groups.js';
export const REFRESH_OBJECTIVES = ['freshness', 'changes', 'balanced'] as const;
export type RefreshObjective = (typeof REFRESH_OBJECTIVES)[number];

const HOUR_MS = 3_600_000;

/** 1 − e^−x(1 + x), accurate for small x too (the chance of two or more changes in x expected). */
export function gain(x: number): number {
  if (x <= 0) return 0;
  if (x < 1e-4) return (x * x) / 2 - (x * x * x) / 3;
  return -Math.expm1(-x) - x * Math.exp(-x);
}

/** The x ≥ 0 with gain(x) = c; Infinity when c ≥ 1 (gain never reaches 1). */
export function gainInverse(c: number): number {
  if (c <= 0) return 0;
  if (c >= 1) return Infinity;
  let lo = 0;
  let hi = 1;
  while (gain(hi) < c) hi *= 2;
  // gain is increasing: 50 halvings leave the bracket far below any interval's rounding.
  for (let i = 0; i < 50; i++) {
    const mid = (lo + hi) / 2;
    if (gain(mid) < c) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** A country's tuned policy: what the planner ranks by and what a write sets the next refresh from. */
export interface RefreshPolicy {
  /** The price of a refresh μ: a product is refreshed when its index reaches it. */
  readonly price: number;
  /** Freshness's weight w in the index, in [0, 1]. */
  readonly weight: number;
  /** τ_u: hours between refreshes if the calls were shared evenly by priority 0's products. */
  readonly evenHours: number;
  /** Priority 0's estimates when it was tuned, by rate: the prior of posteriorRate (change-rate.ts). */
  readonly prior?: readonly { readonly rate: number; readonly count: number }[];
  /** What the products' features say of their rates: each product's prior is moved by it (rate-groups.ts). */
  readonly groups?: GroupModel | null;
}

/** Freshness's weight of an objective: `balanced` takes REFRESH_BALANCE (null: `auto`). */
export function weightOf(objective: RefreshObjective, balance: number | null): number | null {
  if (objective === 'changes') return 0;
  if (objective === 'freshness') return 1;
  return balance;
}

/** The index's factor for a product of rate λ (per hour): what one more unit of gain is worth. */
function worth(policy: Pick<RefreshPolicy, 'weight' | 'evenHours'>, lambda: number): number {
  return policy.weight / (lambda * policy.evenHours) + (1 - policy.weight);
}

/**
 * The index of a product changing `ratePerHour`, last seen `sinceMs` ago. A product never seen (or
 * with no estimate) is worth the most: nothing is known of it.
 */
export function refreshIndex(
  policy: Pick<RefreshPolicy, 'weight' | 'evenHours'>,
  ratePerHour: number | null,
  sinceMs: number | null,
): number {
  if (ratePerHour === null || sinceMs === null) return Infinity;
  const lambda = Math.max(ratePerHour, 1e-9);
  return gain((lambda * Math.max(0, sinceMs)) / HOUR_MS) * worth(policy, lambda);
}

/**
 * Hours after a refresh at which the index of a product changing `ratePerHour` reaches the price
 * (Infinity when it never does: the caller bounds it by the priority's interval).
 */
export function hoursToPrice(policy: RefreshPolicy, ratePerHour: number): number {
  const lambda = Math.max(ratePerHour, 1e-9);
  return gainInverse(policy.price / worth(policy, lambda)) / lambda;
}
