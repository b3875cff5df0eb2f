import type { AlertFields } from '../../models/alert.js';
import type { ProductChange } from '../../catalog/history.js';

export type AlertRule = Pick<AlertFields, 'kind' | 'price' | 'percent'> &
  Partial<Pick<AlertFields, 'amount' | 'reference' | 'rearm_above' | 'rearm_after_ms' | 'rank'>>;

/** Whether a sales rank is in the band rank_below watches: at or better than (at most) the alert's rank. */
function inTopBand(alert: AlertRule, rank: number | null): boolean {
  return rank !== null && alert.rank !== null && alert.rank !== undefined && rank <= alert.rank;
}

/** Whether a price moved from `from` to `to` by the alert's percent or amount, down (price_drop) or up (price_rise). */
function moved(alert: AlertRule, from: number, to: number): boolean {
  const amount = alert.amount ?? null;
  if (alert.percent !== null) {
    // In integers: to ≤ from·(100 - percent)/100 (or ≥ from·(100 + percent)/100), with no rounding of the threshold.
    return alert.kind === 'price_drop' ? to * 100 <= from * (100 - alert.percent) : to * 100 >= from * (100 + alert.percent);
  }
  if (amount === null) return false;
  return alert.kind === 'price_drop' ? from - to >= amount : to - from >= amount;
}

/** Whether a price_drop / price_rise compares against a reference other than the point before. */
export function usesReference(alert: AlertRule): boolean {
  return (alert.kind === 'price_drop' || alert.kind === 'price_rise') && (alert.reference ?? 'previous') !== 'previous';
}

/**
 * Whether a change is one the alert describes. Prices compare only in one currency. Every kind but
 * `price_below` and `rank_below` needs a state before the change; those two also fire on a
 * product's first observation, when it is already below. `rank_below` / `rank_above` watch the
 * sales rank cross the alert's `rank` (into the top band of ranks at most `rank`, out of it),
 * `out_of_stock` the product leave stock, `buybox_change` the price shown become or stop being the
 * Buy Box winner's. It fires when the price goes below the threshold, not
 * again while it stays there. `price_drop` and `price_rise` compare against the point before, by
 * `percent` or by `amount` (minor units), whichever the alert has; with another `reference`
 * (lowest, highest, at_creation) against that price, firing when the move is reached and not
 * again while it holds.
 */
export function firesOn(
  alert: AlertRule,
  change: Pick<ProductChange, 'before' | 'after'>,
  /** For a reference other than previous: the reference price, in the currency of `after`; null when none is known. */
  reference: number | null = null,
): boolean {
  const { before, after } = change;
  const sameCurrency = before !== null && before.currency === after.currency;
  switch (alert.kind) {
    case 'price_below': {
      if (after.price === null || alert.price === null || after.price >= alert.price) return false;
      return before === null || before.price === null || !sameCurrency || before.price >= alert.price;
    }
    case 'price_drop':
    case 'price_rise': {
      if (usesReference(alert)) {
        // Against a reference: when the move from it is reached, not again while it holds.
        if (after.price === null || reference === null || !moved(alert, reference, after.price)) return false;
        return before === null || before.price === null || !sameCurrency || !moved(alert, reference, before.price);
      }
      if (!before || before.price === null || after.price === null || !sameCurrency) return false;
      return moved(alert, before.price, after.price);
    }
    case 'back_in_stock':
      return before !== null && before.availability !== 'in_stock' && after.availability === 'in_stock';
    case 'out_of_stock':
      return before !== null && before.availability === 'in_stock' && after.availability !== 'in_stock';
    case 'buybox_change':
      // Only between two points with a price: a stock-out is out_of_stock's, not a Buy Box change.
      return before !== null && before.price !== null && after.price !== null && before.buybox !== after.buybox;
    case 'rank_below':
      // Into the band from outside it (or from no rank), like price_below: not again while it stays.
      return inTopBand(alert, after.rank) && (before === null || !inTopBand(alert, before.rank));
    case 'rank_above':
      // Out of the band: a rank worse than the alert's, from one within it.
      return before !== null && inTopBand(alert, before.rank) && after.rank !== null && !inTopBand(alert, after.rank);
    case 'any_change':
      return before !== null;
  }
}

/** An alert's re-arming state (kept on the alert; see AlertFields). */
export interface ArmState {
  readonly armed: boolean;
  readonly last_fired_at: Date | null;
  readonly last_fired_key: string | null;
}

export const FRESH_STATE: ArmState = { armed: true, last_fired_at: null, last_fired_key: null };

/** The state an alert as stored carries (alerts of before re-arming have none: armed, never fired). */
export function stateOf(alert: Partial<ArmState>): ArmState {
  return { armed: alert.armed ?? true, last_fired_at: alert.last_fired_at ?? null, last_fired_key: alert.last_fired_key ?? null };
}

/** Whether the alert keeps a re-arming state: a price_below with `rearm_above` or `rearm_after`. */
export function rearms(alert: AlertRule): boolean {
  return alert.kind === 'price_below' && ((alert.rearm_above ?? null) !== null || (alert.rearm_after_ms ?? null) !== null);
}

/**
 * Judges a change with the alert's state, and answers the state after it. An alert without
 * re-arming options is `firesOn` and keeps no state. A price_below that re-arms fires on a crossing
 * below the threshold (as `firesOn`) only when it is armed and `rearm_after` has passed since its
 * last firing (by the points' times). A firing disarms it; a point at or above
 * `price + rearm_above` (0 when absent) arms it again. A crossing held back by `rearm_after` is
 * dropped, not deferred. The change that last fired fires again (a retried batch: same delivery).
 */
export function judge(
  alert: AlertRule,
  state: ArmState,
  change: Pick<ProductChange, 'key' | 'before' | 'after'>,
  reference: number | null = null,
): { fires: boolean; state: ArmState } {
  if (!rearms(alert)) return { fires: firesOn(alert, change, reference), state };
  if (state.last_fired_key === change.key) return { fires: true, state };
  const { after } = change;
  const threshold = alert.price!;
  const rearmAt = threshold + (alert.rearm_above ?? 0);
  const armed = state.armed || (after.price !== null && after.price >= rearmAt);
  const waitMs = alert.rearm_after_ms ?? null;
  const cooled = waitMs === null || state.last_fired_at === null || after.at.getTime() - state.last_fired_at.getTime() >= waitMs;
  if (armed && cooled && firesOn(alert, change)) {
    return { fires: true, state: { armed: false, last_fired_at: after.at, last_fired_key: change.key } };
  }
  return { fires: false, state: { ...state, armed } };
}

/** Whether two states differ (only a changed state is written back). */
export function sameState(a: ArmState, b: ArmState): boolean {
  return a.armed === b.armed && a.last_fired_key === b.last_fired_key && a.last_fired_at?.getTime() === b.last_fired_at?.getTime();
}

/**
 * Whether the alert's condition already holds on the product's current point (`after`, with the
 * point before it), as fire_on_create asks: price_below when the price is below the threshold,
 * back_in_stock when in stock (out_of_stock when not), rank_below / rank_above when the rank is in
 * / out of the band, price_drop / price_rise and buybox_change when the last change was such a move
 * (or, against a reference, when the price is that far from it). any_change never holds.
 */
export function holdsNow(alert: AlertRule, change: Pick<ProductChange, 'before' | 'after'>, reference: number | null = null): boolean {
  const { after } = change;
  switch (alert.kind) {
    case 'price_below':
      return after.price !== null && alert.price !== null && after.price < alert.price;
    case 'back_in_stock':
      return after.availability === 'in_stock';
    case 'out_of_stock':
      return after.availability !== 'in_stock';
    case 'rank_below':
      return inTopBand(alert, after.rank);
    case 'rank_above':
      return after.rank !== null && !inTopBand(alert, after.rank);
    case 'buybox_change':
      return firesOn(alert, change);
    case 'price_drop':
    case 'price_rise':
      if (usesReference(alert)) return after.price !== null && reference !== null && moved(alert, reference, after.price);
      return firesOn(alert, change);
    case 'any_change':
      return false;
  }
}
