/**
 * Price history: one point per observed change of a product's price, currency, availability, Buy
 * Box or sales rank, and one at its first observation. Points are found and written by the same
 * batch write that stores the refresh (src/catalog/writes.ts): one insertMany per batch, none per
 * product.
 */
import { z } from 'zod';
import type { Connection } from 'mongoose';
import type { Country } from '../core/identifiers.js';
import { availabilitySchema, type Availability, type UpstreamItem } from '../core/product.js';
import type { ProductFields } from '../models/product.js';
import { historyPointModel, type HistoryPointFields } from '../models/history-point.js';
import { dateTimeTextSchema, formatDateTime } from '../core/dates.js';
import { isDuplicateKey } from '../db/mongo.js';

/** What a point records: the values whose change makes a point. */
export interface PointValues {
  readonly price: number | null;
  readonly currency: string | null;
  readonly availability: Availability;
  readonly buybox: boolean;
  readonly rank: number | null;
}

export interface Point extends PointValues {
  readonly at: Date;
}

/** The product as a change is judged against: what it showed last, and when its last point was. */
export type PriorState = Pick<ProductFields, 'asin' | 'price' | 'availability' | 'buybox' | 'sales_rank' | 'updated_at' | 'history_at'>;

/** One change a batch saw: the point it appends, and the state before it (null: the first observation). */
export interface ProductChange {
  readonly country: Country;
  readonly asin: string;
  /**
   * Names the change: the product and the time of the point before it. A retried batch that saw the
   * same change again (its first write failed after the point was written) makes the same key, so
   * the point and its deliveries are not repeated.
   */
  readonly key: string;
  readonly before: Point | null;
  readonly after: Point;
}

export function valuesOfItem(item: UpstreamItem): PointValues {
  return {
    price: item.price?.amount ?? null,
    currency: item.price?.currency ?? null,
    availability: item.availability,
    buybox: item.buyBox,
    rank: item.salesRank,
  };
}

/** The last values the product showed, and since when; null when the upstream never answered for it. */
export function pointOfProduct(p: PriorState): Point | null {
  if (!p.updated_at) return null;
  return {
    at: p.history_at ?? p.updated_at,
    price: p.price?.amount ?? null,
    currency: p.price?.currency ?? null,
    availability: p.availability,
    buybox: p.buybox ?? false,
    rank: p.sales_rank,
  };
}

/** The offer a buyer sees: what the scheduler learns a product's change rate from. */
export function sameOffer(a: PointValues, b: PointValues): boolean {
  return a.price === b.price && a.currency === b.currency && a.availability === b.availability;
}

export function sameValues(a: PointValues, b: PointValues): boolean {
  return sameOffer(a, b) && a.buybox === b.buybox && a.rank === b.rank;
}

/** The change an item makes to its product, if any. A product without a point yet always gets one. */
export function changeOf(country: Country, item: UpstreamItem, prior: PriorState | undefined, now: Date): ProductChange | null {
  const last = prior ? pointOfProduct(prior) : null;
  const values = valuesOfItem(item);
  const unchanged = last !== null && sameValues(last, values);
  if (unchanged && prior?.history_at) return null;
  const since = prior?.history_at?.getTime() ?? 0;
  // A product known before it had points gets its first one now; only a new value makes it a change.
  return {
    country,
    asin: item.asin,
    key: `${country}.${item.asin}.${since}`,
    before: unchanged ? null : last,
    after: { at: now, ...values },
  };
}

/**
 * Appends the points of a batch's changes in one unordered insertMany. A point already there (the
 * same change, written by an attempt that failed later) is skipped, not an error.
 */
export async function appendHistory(conn: Connection, historyDays: number, changes: readonly ProductChange[]): Promise<void> {
  if (changes.length === 0) return;
  const docs: HistoryPointFields[] = changes.map((c) => ({
    _id: c.key,
    country: c.country,
    asin: c.asin,
    ...c.after,
    expires_at: new Date(c.after.at.getTime() + historyDays * 86_400_000),
  }));
  try {
    await historyPointModel(conn).insertMany(docs, { ordered: false, lean: true });
  } catch (err) {
    const writeErrors = (err as { writeErrors?: unknown[] }).writeErrors;
    const allDuplicates = Array.isArray(writeErrors) && writeErrors.length > 0 && writeErrors.every((e) => isDuplicateKey(e));
    if (!allDuplicates && !isDuplicateKey(err)) throw err;
  }
}

/** A history point as the API answers it. */
export const historyPointRecordSchema = z
  .object({
    at: dateTimeTextSchema,
    price: z.number().int().nullable().meta({ description: 'Minor units (yen, cents); null when nothing was on offer.' }),
    currency: z.string().nullable(),
    availability: availabilitySchema,
    buybox: z.boolean().meta({ description: "Whether the price was the Buy Box winner's." }),
    rank: z.number().int().nullable().meta({ description: 'Sales rank; null when the upstream gave none.' }),
  })
  .meta({ id: 'HistoryPoint', description: "One observed state of a product's price and availability." });
export type HistoryPointRecord = z.infer<typeof historyPointRecordSchema>;

export function presentPoint(p: Point, timeZone: string): HistoryPointRecord {
  return {
    at: formatDateTime(p.at, timeZone),
    price: p.price,
    currency: p.currency,
    availability: p.availability,
    buybox: p.buybox,
    rank: p.rank,
  };
}
