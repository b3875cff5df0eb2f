/**
 * What a refresh of a due product is worth, for the objective the operator chose
 * (REFRESH_OBJECTIVE). The planner takes the due products of priority 0 in order of this index.
 *
 * A product changes as a Poisson process of rate λ (per hour, estimated in change-rate.ts) and was
 * last seen τ hours ago; x = λτ. Refreshing it at a steady interval τ:
 * - sees a change at a rate of (1 − e^−x)/τ (a refresh sees that the value moved, not how often);
 * - keeps the stored value current for a share (1 − e^−x)/x of the time (Cho & Garcia-Molina,
 *   "Effective page refresh policies", ACM TODS 2003).
 * Spending a fixed number of refreshes on many products, the Lagrangian optimum refreshes each when
 * the derivative of its objective in its refresh frequency f = 1/τ reaches one common threshold
 * (the price of a call). Both derivatives share the factor gain(x) = 1 − e^−x(1 + x):
 * - `changes`:   d/df [(1 − e^−x) f]       = gain(x)
 * - `freshness`: d/df [(1 − e^−x)/x]       = gain(x) / λ   (in hours; times ρ below to compare)
 * So the index of a product is its term now; the higher it is, the sooner a refresh pays. The
 * freshness index is bounded by 1/λ: the fastest changers, which no affordable refresh keeps
 * current, are given up first, as Cho & Garcia-Molina found the freshness-optimal policy does.
 * `balanced` weighs the two, w on freshness (REFRESH_BALANCE):
 *   index = gain(x) · (w · ρ/λ + (1 − w)),
 * where ρ = 1 / the priority's interval (REFRESH_INTERVAL_P0) makes freshness's term a pure number
 * that equals changes' for a product changing once an interval. A product that never changes has
 * an index growing as τ²: it is refreshed at its priority's interval at the latest, never starved.
 */
import type { Config } from '../../config/env.js';

export const REFRESH_OBJECTIVES = ['freshness', 'changes', 'balanced'] as const;
export type RefreshObjective = (typeof REFRESH_OBJECTIVES)[number];

const HOUR_MS = 3_600_000;

/** 1 − e^−x(1 + x), accurate for small x too (the chance of two or more changes in x expected). */
export function gain(x: number): number {
  if (x <= 0) return 0;
  if (x < 1e-4) return (x * x) / 2 - (x * x * x) / 3;
  return -Math.expm1(-x) - x * Math.exp(-x);
}

export interface ObjectiveSettings {
  readonly objective: RefreshObjective;
  /** `balanced`: freshness's weight, in [0, 1]. */
  readonly balance: number;
}

/**
 * The index of a product changing `ratePerHour`, last seen `sinceMs` ago, whose priority's interval
 * is `intervalMs`. A product never seen (or with no estimate) is worth the most: nothing is known.
 */
export function refreshIndex(settings: ObjectiveSettings, ratePerHour: number | null, sinceMs: number | null, intervalMs: number): number {
  if (ratePerHour === null || sinceMs === null) return Infinity;
  const lambda = Math.max(ratePerHour, 1e-9);
  const g = gain(lambda * Math.max(0, sinceMs / HOUR_MS));
  const rho = HOUR_MS / intervalMs;
  switch (settings.objective) {
    case 'changes':
      return g;
    case 'freshness':
      return (g * rho) / lambda;
    case 'balanced':
      return g * ((settings.balance * rho) / lambda + (1 - settings.balance));
  }
}

/** The settings of a configuration. */
export function objectiveOf(config: Pick<Config, 'refresh'>): ObjectiveSettings {
  return { objective: config.refresh.objective, balance: config.refresh.balance };
}
