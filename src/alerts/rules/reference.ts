import mongoose, { type Connection } from 'mongoose';
import { DELIVERY_DB_TIMEOUT_MS } from '../../../config/alerts.js';
import type { ProductChange } from '../../catalog/history.js';
import { historyPointModel } from '../../models/history-point.js';
import type { Alert } from './alert.js';
import { usesReference } from './triggers.js';

const DAY_MS = 86_400_000;

/**
 * The lowest or highest price of a product in one currency over the `days` before a change: the
 * prices of its points in that window, the one in effect when the window opened (the last point
 * before it), and the one before the change. Bounded: one product's points of `days` days, on the
 * history's { country, asin, at } index, reduced to two numbers in MongoDB. null when none had a
 * price in that currency.
 */
export async function windowExtremes(
  conn: Connection,
  change: Pick<ProductChange, 'country' | 'asin' | 'before' | 'after'>,
  days: number,
): Promise<{ lowest: number; highest: number } | null> {
  const currency = change.after.currency;
  const to = change.after.at;
  const from = new Date(to.getTime() - days * DAY_MS);
  const points = historyPointModel(conn);
  const [inWindow, opening] = await Promise.all([
    points
      .aggregate<{ lowest: number | null; highest: number | null }>([
        { $match: { country: change.country, asin: change.asin, at: { $gte: from, $lt: to }, currency } },
        { $group: { _id: null, lowest: { $min: '$price' }, highest: { $max: '$price' } } },
      ])
      .option({ maxTimeMS: DELIVERY_DB_TIMEOUT_MS }),
    points
      .findOne({ country: change.country, asin: change.asin, at: mongoose.trusted({ $lt: from }) })
      .sort({ at: -1 })
      .select({ price: 1, currency: 1 })
      .maxTimeMS(DELIVERY_DB_TIMEOUT_MS)
      .lean(),
  ]);
  const prices = [inWindow[0]?.lowest, inWindow[0]?.highest];
  if (opening && opening.currency === currency) prices.push(opening.price);
  if (change.before && change.before.currency === currency) prices.push(change.before.price);
  const known = prices.filter((p): p is number => typeof p === 'number');
  return known.length ? { lowest: Math.min(...known), highest: Math.max(...known) } : null;
}

/**
 * Each change's reference price for the alerts that compare against one (reference lowest, highest
 * or at_creation), keyed by alert id and change key; one window query per product, change and
 * number of days, however many alerts share it.
 */
export async function referencesFor(
  conn: Connection,
  pairs: readonly { change: ProductChange; alert: Alert }[],
): Promise<Map<string, number | null>> {
  const out = new Map<string, number | null>();
  const windows = new Map<string, Promise<{ lowest: number; highest: number } | null>>();
  for (const { change, alert } of pairs) {
    if (!usesReference(alert)) continue;
    const key = `${alert._id.toHexString()}.${change.key}`;
    if (alert.reference === 'at_creation') {
      const price = alert.reference_price ?? null;
      out.set(key, price !== null && alert.reference_currency === change.after.currency ? price : null);
      continue;
    }
    const days = alert.days ?? 1;
    const wkey = `${change.key}.${days}`;
    if (!windows.has(wkey)) windows.set(wkey, windowExtremes(conn, change, days));
    const extremes = await windows.get(wkey)!;
    out.set(key, extremes ? (alert.reference === 'lowest' ? extremes.lowest : extremes.highest) : null);
  }
  return out;
}
