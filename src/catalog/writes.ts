import mongoose, { type Connection } from 'mongoose';
import type { Config } from '../../config/env.js';
import type { Country } from './identifiers.js';
import type { ItemOutcome, UpstreamItem } from './product.js';
import { productModel, type ProductFields, type ProductModel } from '../models/product.js';

type BulkOps = Parameters<ProductModel['bulkWrite']>[0];
import { searchKeys } from '../search/keys.js';

export interface WriteResult {
  readonly found: number;
  readonly notFound: number;
  readonly notAccessible: number;
}

/** The fields an upstream item sets on its product. */
function dataOf(item: UpstreamItem): Partial<ProductFields> {
  return {
    title: item.title,
    brand: item.brand,
    image: item.image,
    url: item.url,
    ean: item.eans,
    price: item.price,
    availability: item.availability,
    sales_rank: item.salesRank,
    browse_nodes: item.browseNodes.map((n) => ({ id: n.id, name: n.name })),
    raw: item.raw,
    search_keys: searchKeys(item.title, item.brand),
  };
}

/**
 * Writes what the upstream answered for a batch in one unordered bulkWrite, upserting by
 * (country, asin): found items get their data and `updated_at`; not-found and inaccessible ones are
 * recorded as such (no retry: their next attempt is at their usual interval). Every product's next
 * refresh is set from its effective priority; a product nobody watches is left off the schedule.
 * `created_at` is set only when the product is new.
 */
export async function writeOutcomes(
  conn: Connection,
  config: Pick<Config, 'refresh'>,
  country: Country,
  items: readonly UpstreamItem[],
  outcomes: Readonly<Record<string, ItemOutcome>>,
  now = new Date(),
): Promise<WriteResult> {
  const products = productModel(conn);
  const asins = Object.keys(outcomes);
  const current = await products
    .find({ country, asin: mongoose.trusted({ $in: asins }) })
    .select({ asin: 1, priority: 1 })
    .lean();
  const state = new Map(current.map((p) => [p.asin, p]));
  const byAsin = new Map(items.map((i) => [i.asin, i]));
  let found = 0;
  let notFound = 0;
  let notAccessible = 0;

  const ops: BulkOps = asins.map((asin) => {
    const outcome = outcomes[asin]!;
    const prior = state.get(asin);
    const priority = prior?.priority ?? null;
    const next = priority === null ? null : new Date(now.getTime() + config.refresh.intervalMs[priority]);
    // The refresh ends every claim on the product: a batch still queued with it skips the product.
    const schedule = { last_attempt_at: now, next_refresh_at: next, plan_token: null };
    const item = byAsin.get(asin);
    let set: Partial<ProductFields>;
    if (outcome === 'found' && item) {
      found++;
      set = { ...dataOf(item), ...schedule, status: 'ok', last_error: null, updated_at: now };
    } else if (outcome === 'not_accessible') {
      notAccessible++;
      set = { ...schedule, status: 'not_accessible', last_error: 'the upstream does not give access to this item' };
    } else {
      notFound++;
      set = { ...schedule, status: 'not_found', last_error: 'the upstream does not know this ASIN in this country' };
    }
    return {
      updateOne: {
        filter: { country, asin },
        update: { $set: set, $setOnInsert: { created_at: now, priority: null } },
        upsert: true,
      },
    };
  });
  if (ops.length) await products.bulkWrite(ops, { ordered: false });
  return { found, notFound, notAccessible };
}

/** Upserts items found by a search or a crawl, keeping each product's schedule as it is. */
export async function writeFoundItems(conn: Connection, country: Country, items: readonly UpstreamItem[], now = new Date()): Promise<void> {
  if (items.length === 0) return;
  const ops: BulkOps = items.map((item) => ({
    updateOne: {
      filter: { country, asin: item.asin },
      update: {
        $set: { ...dataOf(item), status: 'ok', last_error: null, updated_at: now, last_attempt_at: now },
        $setOnInsert: { created_at: now, priority: null, next_refresh_at: null },
      },
      upsert: true,
    },
  }));
  await productModel(conn).bulkWrite(ops, { ordered: false });
}
