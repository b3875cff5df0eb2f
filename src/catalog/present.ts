import type { ProductFields } from '../models/product.js';
import type { ProductRecord } from './product.js';
import { formatDateTime, formatNullableDateTime } from '../dates.js';

/** Fields a stored product keeps to itself: never read for an API answer. */
export const PRODUCT_HIDDEN_FIELDS = { raw: 0, search_keys: 0 } as const;

/** A stored product as the API's product record (src/catalog/product.ts, README "Product record"). */
export function presentProduct(p: Omit<ProductFields, 'raw' | 'search_keys'>, timeZone: string): ProductRecord {
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
