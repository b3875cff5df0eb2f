/**
 * Each account's fair part of priority 0's refreshes, for the tuning of a country's price
 * (tune-country.ts). The price spreads priority 0's calls over every product with an estimate;
 * without this, an account whose catalogue alone would take every call (a heavy importer or
 * crawler) raises the price for everyone, and every other account's products wait longer although
 * they ask for far less than their share. So the demand the price is tuned to is max-min fair by
 * account weight (the weights of docs/fairness.md): an account asking for less than its share at
 * the shortest interval counts in full; one asking for more counts at its share (it is rationed by
 * the planner's backlog, where account shares and the index order pick its products), and the
 * share it cannot use goes to the others.
 */

/** One account's priority-0 refreshes an hour at REFRESH_MIN_INTERVAL, and its weight. */
export interface AccountDemand {
  readonly id: string;
  readonly weight: number;
  readonly perHour: number;
}

/** An account past its fair part: the refreshes an hour that part allows it. */
export interface Allowance {
  readonly id: string;
  readonly perHour: number;
  /** What it asks for beyond its part (refreshes an hour). */
  readonly excess: number;
}

/**
 * Water-filling: accounts in order of demand per weight; each one below the level the budget left
 * allows the rest gets its demand, and once one is above it, it and every account after it get the
 * level times its weight. Returns the accounts past their part, the furthest past first (empty when
 * the budget covers every demand).
 */
export function overAllowances(demands: readonly AccountDemand[], budgetPerHour: number): Allowance[] {
  const sorted = demands.filter((d) => d.perHour > 0 && d.weight > 0).sort((a, b) => a.perHour / a.weight - b.perHour / b.weight);
  let left = Math.max(0, budgetPerHour);
  let weights = sorted.reduce((n, d) => n + d.weight, 0);
  const over: Allowance[] = [];
  for (const d of sorted) {
    const level = left / weights;
    if (over.length === 0 && d.perHour <= level * d.weight) {
      left -= d.perHour;
      weights -= d.weight;
      continue;
    }
    const perHour = level * d.weight;
    over.push({ id: d.id, perHour, excess: d.perHour - perHour });
  }
  return over.sort((a, b) => b.excess - a.excess);
}
