import type { AlertFields } from '../models/alert.js';
import type { ProductChange } from '../catalog/history.js';

export type AlertRule = Pick<AlertFields, 'kind' | 'price' | 'percent'>;

/**
 * Whether a change is one the alert describes. Prices compare only in one currency. Every kind but
 * `price_below` needs a state before the change; `price_below` also fires on a product's first
 * observation, when it is already below. It fires when the price goes below the threshold, not
 * again while it stays there.
 */
export function firesOn(alert: AlertRule, change: Pick<ProductChange, 'before' | 'after'>): boolean {
  const { before, after } = change;
  const sameCurrency = before !== null && before.currency === after.currency;
  switch (alert.kind) {
    case 'price_below': {
      if (after.price === null || alert.price === null || after.price >= alert.price) return false;
      return before === null || before.price === null || !sameCurrency || before.price >= alert.price;
    }
    case 'price_drop': {
      if (!before || before.price === null || after.price === null || !sameCurrency || alert.percent === null) return false;
      // In integers: after ≤ before·(100 - percent)/100, with no rounding of the threshold.
      return after.price * 100 <= before.price * (100 - alert.percent);
    }
    case 'back_in_stock':
      return before !== null && before.availability !== 'in_stock' && after.availability === 'in_stock';
    case 'any_change':
      return before !== null;
  }
}
