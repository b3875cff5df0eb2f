import type { ProductFields } from '../models/product.js';
import type { ProductRecord } from '../core/product.js';
import { formatDateTime, formatNullableDateTime } from '../core/dates.js';

/**
 * The fields of a stored product that its API record shows: the only ones read for an answer.
 * Reading no more than these (not the upstream's raw answer, the search keys, the change-rate
 * observations, the owners, nor the `_id`, which the driver would make an ObjectId of for each
 * product) keeps what MongoDB sends and the driver decodes small.
 */
export const PRODUCT_SHOWN_FIELDS = {
  _id: 0,
  asin: 1,
  country: 1,
  ean: 1,
  title: 1,
  brand: 1,
  image: 1,
  url: 1,
  price: 1,
  availability: 1,
  sales_rank: 1,
  browse_nodes: 1,
  created_at: 1,
  updated_at: 1,
  status: 1,
  priority: 1,
  next_refresh_at: 1,
  last_attempt_at: 1,
  change_rate: 1,
} as const;

/** A stored product as read for an answer. */
export type ShownProduct = Pick<ProductFields, Exclude<keyof typeof PRODUCT_SHOWN_FIELDS, '_id'>>;

/** A stored product as the API's product record (src/core/product.ts, docs/api.md "Product record"). */
export function presentProduct(p: ShownProduct, timeZone: string): ProductRecord {
  return {
    asin: p.asin,
    country: p.country,
    ean: p.ean,
    title: p.title,
    brand: p.brand,
    image: p.image,
    url: p.url,
    price: p.price ? { amount: p.price.amount, currency: p.price.currency } : null,
    availability: p.availability,
    sales_rank: p.sales_rank,
    browse_nodes: p.browse_nodes.map((n) => ({ id: n.id, name: n.name ?? null })),
    created_at: formatDateTime(p.created_at, timeZone),
    updated_at: formatNullableDateTime(p.updated_at, timeZone),
    refresh: {
      status: p.status,
      priority: p.priority,
      next_at: formatNullableDateTime(p.next_refresh_at, timeZone),
      last_attempt_at: formatNullableDateTime(p.last_attempt_at, timeZone),
      // Three significant digits: an estimate, not a count.
      changes_per_day: p.change_rate === null || p.change_rate === undefined ? null : Number((p.change_rate * 24).toPrecision(3)),
    },
  };
}
