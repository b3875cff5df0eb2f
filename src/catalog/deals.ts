import mongoose, { type Connection, type Types } from 'mongoose';
import { z } from 'zod';
import type { Country } from '../core/identifiers.js';
import { ValidationError } from '../core/errors.js';
import { dealField, DEAL_BASES, DEAL_WINDOWS, type DealBasis, type DealField, type DealWindow } from '../core/price-levels.js';
import { productRecordSchema, priceSchema } from '../core/product.js';
import { dealsIndexName, dealsNodeIndexName, productModel, type ProductFields } from '../models/product.js';
import { watchModel } from '../models/watch.js';
import { LIST_QUERY_MAX_MS } from '../db/mongo.js';
import { LAGGING_READ } from '../db/read-preference.js';
import { PRODUCT_SHOWN_FIELDS, presentProduct, type ShownProduct } from './present.js';

/**
 * How deep the deals list goes: its first thousand deals by a figure. A page skips the deals before
 * it on the index, so this bounds what any page costs; a narrower filter (`min_drop`, a price range)
 * reaches further.
 */
export const MAX_DEALS_DEPTH = 1_000;

/** The watched products an account's feed looks among: its most recent watches. */
export const FEED_WATCHES = 500;

export interface DealFilter {
  readonly basis: DealBasis;
  readonly days: DealWindow;
  /** Least drop, in percent. */
  readonly minDrop?: number;
  readonly minPrice?: number;
  readonly maxPrice?: number;
  readonly minRank?: number;
  readonly maxRank?: number;
  /** A browse node the product lists. */
  readonly node?: string;
}

export interface DealsRequest extends DealFilter {
  readonly country: Country;
  readonly page: number;
  readonly limit: number;
}

export type DealProduct = ShownProduct & Pick<ProductFields, 'drop' | 'price_levels'>;

export interface DealsPage {
  readonly items: DealProduct[];
  /** Whether a next page has deals. */
  readonly more: boolean;
}

/** A deal as the API answers it: the product's record and the figure it is listed by. */
export const dealRecordSchema = productRecordSchema
  .extend({
    deal: z.object({
      basis: z.enum(DEAL_BASES),
      days: z.union(DEAL_WINDOWS.map((d) => z.literal(d))),
      drop: z.number().meta({ description: 'How far (%) the price is below the level, as of the last refresh.' }),
      level: priceSchema.nullable().meta({
        description:
          "What the drop is from: by `low`, the window's lowest level above the price; by `avg` or `high`, its average or highest.",
      }),
    }),
  })
  .meta({ id: 'Deal', description: 'A product whose price is below its own recent level.' });
export type DealRecord = z.infer<typeof dealRecordSchema>;

export function presentDeal(p: DealProduct, filter: Pick<DealFilter, 'basis' | 'days'>, timeZone: string): DealRecord {
  const field = dealField(filter.basis, filter.days);
  const level = p.price_levels[field];
  return {
    ...presentProduct(p, timeZone),
    deal: {
      basis: filter.basis,
      days: filter.days,
      drop: p.drop[field] ?? 0,
      level: level === undefined || !p.price ? null : { amount: level, currency: p.price.currency },
    },
  };
}

function range(min: number | undefined, max: number | undefined): Record<string, number> | undefined {
  if (min === undefined && max === undefined) return undefined;
  return { ...(min !== undefined ? { $gte: min } : {}), ...(max !== undefined ? { $lte: max } : {}) };
}

/** The query of a figure's deals: every condition is built here from parsed input. */
export function dealsQuery(countries: Country | readonly Country[], f: DealFilter) {
  const field: DealField = dealField(f.basis, f.days);
  const key = `drop.${field}`;
  // `$gt: 0` names the partial index's own condition, so the server may use it whatever `min_drop` is.
  const filter: Record<string, unknown> = {
    country: typeof countries === 'string' ? countries : mongoose.trusted({ $in: [...countries] }),
    [key]: mongoose.trusted({ $gt: 0, ...(f.minDrop !== undefined ? { $gte: f.minDrop } : {}) }),
  };
  const price = range(f.minPrice, f.maxPrice);
  if (price) filter['price.amount'] = mongoose.trusted(price);
  const rank = range(f.minRank, f.maxRank);
  if (rank) filter.sales_rank = mongoose.trusted(rank);
  if (f.node !== undefined) filter['browse_nodes.id'] = f.node;
  const sort: Record<string, 1 | -1> = { [key]: -1, 'price.amount': 1, sales_rank: 1, _id: 1 };
  const select = { ...PRODUCT_SHOWN_FIELDS, [key]: 1, [`price_levels.${field}`]: 1 };
  return { filter, sort, select, index: f.node === undefined ? dealsIndexName(field) : dealsNodeIndexName(field) };
}

/**
 * The deals feed: per country and figure (basis and window), products by how far their price is
 * below their own recent level, largest drop first. Each figure has its partial index
 * (src/models/product.ts), walked in order from the top: a page reads its own deals and the ones
 * before it, never the catalogue. No total is counted: a page says whether another follows.
 */
export class DealsCatalog {
  constructor(private readonly mongo: Connection) {}

  async list(req: DealsRequest): Promise<DealsPage> {
    const offset = (req.page - 1) * req.limit;
    if (offset >= MAX_DEALS_DEPTH) {
      throw new ValidationError({ page: [`The deals list goes ${MAX_DEALS_DEPTH} deals deep: narrow it with min_drop or a price range.`] });
    }
    const q = dealsQuery(req.country, req);
    const found = await productModel(this.mongo)
      .find(q.filter)
      .hint(q.index)
      .sort(q.sort)
      .skip(offset)
      .limit(req.limit + 1)
      .select(q.select)
      .setOptions(LAGGING_READ)
      .maxTimeMS(LIST_QUERY_MAX_MS)
      .lean<DealProduct[]>();
    return { items: found.slice(0, req.limit), more: found.length > req.limit };
  }

  /**
   * Deals among an account's own watched ASINs (its FEED_WATCHES newest watches), in every country,
   * largest drop first: at most `limit`.
   */
  async forAccount(userId: Types.ObjectId, countries: readonly Country[], f: DealFilter, limit: number): Promise<DealProduct[]> {
    const watches = await watchModel(this.mongo)
      .find({ user_id: userId, kind: 'asin' }, { key: 1 })
      .sort({ created_at: -1, _id: -1 })
      .limit(FEED_WATCHES)
      .maxTimeMS(LIST_QUERY_MAX_MS)
      .lean();
    if (watches.length === 0) return [];
    const q = dealsQuery(countries, f);
    return (
      productModel(this.mongo)
        .find({ ...q.filter, asin: mongoose.trusted({ $in: watches.map((w) => w.key) }) })
        // By the upsert key: the account's few products, not the figure's deals.
        .hint({ country: 1, asin: 1 })
        .select({ ...q.select, price_levels: 1, drop: 1 })
        .limit(FEED_WATCHES)
        .maxTimeMS(LIST_QUERY_MAX_MS)
        .lean<DealProduct[]>()
        .then((found) => {
          const field = dealField(f.basis, f.days);
          return found.sort((a, b) => (b.drop[field] ?? 0) - (a.drop[field] ?? 0)).slice(0, limit);
        })
    );
  }
}
