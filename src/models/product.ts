import { Schema, type Connection, type HydratedDocument, type Model, type Types } from 'mongoose';
import { AVAILABILITY, REFRESH_STATUSES, type Availability, type Price, type RefreshStatus } from '../core/product.js';
import type { Country } from '../core/identifiers.js';
import { DEAL_FIELDS, type DealField } from '../core/price-levels.js';
import { RATE_FEATURES, type RateLevels } from '../core/rate-levels.js';

/**
 * One document per (country, ASIN): the catalogue ("world") shared by every user, and the refresh
 * state the scheduler plans from. `updated_at` is when upstream data was last written (null until
 * the first fetch), not when the document last changed: the world list is ordered by it.
 */
export interface ProductFields {
  _id: Types.ObjectId;
  country: Country;
  asin: string;
  ean: string[];
  title: string | null;
  brand: string | null;
  image: string | null;
  url: string | null;
  price: Price | null;
  availability: Availability;
  sales_rank: number | null;
  /** Whether `price` is the Buy Box winner's; null until the first fetch. */
  buybox: boolean | null;
  browse_nodes: { id: string; name: string | null }[];
  raw: unknown;
  /** Normalised keys of the title and brand: words, their prefixes, n-grams (src/search/ordered-keys.ts). */
  search_keys: string[];
  status: RefreshStatus;
  last_error: string | null;
  /** Highest priority among watchers; null when nobody watches it (then it is not refreshed). */
  priority: 0 | 1 | null;
  /** When the scheduler should refresh it next; null when it is not scheduled. */
  next_refresh_at: Date | null;
  last_attempt_at: Date | null;
  /** The planning pass that last claimed it (see scheduler/planner.ts). */
  plan_token: string | null;
  /** Estimated changes of price or availability per hour (src/scheduling/change-rate.ts); null before its first refresh. */
  change_rate: number | null;
  /** The rate its schedule goes by (src/catalog/writes.ts, learnRate): the estimate, or its posterior. */
  sched_rate: number | null;
  /** The estimate's evidence: the last observations (hours between two refreshes, moved or not). */
  rate_obs: { hours: number; changed: boolean }[];
  /** What the last answer told of it that may predict its rate (src/scheduling/rate-groups.ts); null before. */
  rate_levels: RateLevels | null;
  /** The time of the product's last history point; null before its first. */
  history_at: Date | null;
  /**
   * The accounts it is refreshed for (OWNERS_KEPT at most): its watchers, most urgent and oldest
   * first, or the account whose crawl found it. When a country is short of quota, each account's
   * fair share of the planned refreshes is taken from the products it owns (src/scheduling/due.ts).
   */
  owners: Types.ObjectId[];
  /** Per UTC day, the prices refreshes saw over the last 90 days (src/core/price-levels.ts). */
  price_days: { d: number; lo: number; hi: number; sum: number; n: number }[];
  /** The lowest, average and highest price of each deal window, as of the last refresh. */
  price_levels: Partial<Record<DealField, number>>;
  /** How far (%) the price is below each level: set only where it is a deal, so each index holds deals only. */
  drop: Partial<Record<DealField, number>>;
  created_at: Date;
  updated_at: Date | null;
}

const priceSchema = new Schema({ amount: Number, currency: String }, { _id: false });
const dayFields = Object.fromEntries(DEAL_FIELDS.map((f) => [f, { type: Number }]));
const priceDaySchema = new Schema({ d: Number, lo: Number, hi: Number, sum: Number, n: Number }, { _id: false });
const nodeSchema = new Schema({ id: String, name: { type: String, default: null } }, { _id: false });

export const productSchema = new Schema<ProductFields>(
  {
    country: { type: String, required: true },
    asin: { type: String, required: true },
    ean: { type: [String], default: [] },
    title: { type: String, default: null },
    brand: { type: String, default: null },
    image: { type: String, default: null },
    url: { type: String, default: null },
    price: { type: priceSchema, default: null },
    availability: { type: String, enum: AVAILABILITY, default: 'unknown' },
    sales_rank: { type: Number, default: null },
    buybox: { type: Boolean, default: null },
    browse_nodes: { type: [nodeSchema], default: [] },
    raw: { type: Schema.Types.Mixed, default: null },
    search_keys: { type: [String], default: [], select: false },
    status: { type: String, enum: REFRESH_STATUSES, default: 'pending' },
    last_error: { type: String, default: null },
    priority: { type: Number, enum: [0, 1, null], default: null },
    next_refresh_at: { type: Date, default: null },
    last_attempt_at: { type: Date, default: null },
    plan_token: { type: String, default: null },
    history_at: { type: Date, default: null },
    owners: { type: [Schema.Types.ObjectId], default: [] },
    change_rate: { type: Number, default: null },
    sched_rate: { type: Number, default: null },
    rate_obs: { type: [new Schema({ hours: Number, changed: Boolean }, { _id: false })], default: [] },
    rate_levels: {
      type: new Schema(Object.fromEntries(RATE_FEATURES.map((f) => [f, String])), { _id: false }),
      default: null,
    },
    price_days: { type: [priceDaySchema], default: undefined, select: false },
    price_levels: { type: new Schema(dayFields, { _id: false }), default: undefined },
    drop: { type: new Schema(dayFields, { _id: false }), default: undefined },
    created_at: { type: Date, required: true },
    updated_at: { type: Date, default: null },
  },
  // Sharded by the upsert key when one replica set is not enough (docs/scaling.md): a refresh's
  // writes, the planner's claims and a forced update name country and ASIN, so each goes to the
  // shards of its products; the planner's due queries name the country, a prefix of the key.
  { collection: 'products', versionKey: false, strict: 'throw', shardKey: { country: 1, asin: 1 } },
);

/** Named so that the world search can hint it, and the re-keying know when it is done. */
export const PRODUCT_SEARCH_INDEX = 'product_search';
/** The index of the keys before word prefixes: while it exists, products have not all been re-keyed. */
export const LEGACY_PRODUCT_SEARCH_INDEX = 'search_keys_1_updated_at_-1';

// The upsert key: bulk writes and concurrent watchers meet on it.
productSchema.index({ country: 1, asin: 1 }, { unique: true });
// Look-ups by code, and the world list's order (newest update first, _id breaking ties).
productSchema.index({ ean: 1, country: 1 });
productSchema.index({ updated_at: -1, _id: -1 });
productSchema.index({ country: 1, updated_at: -1, _id: -1 });
productSchema.index({ created_at: -1, _id: -1 });
productSchema.index({ country: 1, created_at: -1, _id: -1 });
// The world search (src/search/ordered-keys.ts): one query term's products, newest first, so a page
// stops at its end however many products match.
productSchema.index({ search_keys: 1, updated_at: -1, _id: -1 }, { name: PRODUCT_SEARCH_INDEX });
// The planner's query: per country, due products, priority 1 first, most overdue first, read in
// index order with no in-memory sort. Products nobody watches have next_refresh_at null, which a
// `$lte: <date>` range never reaches (BSON type bracketing), so they cost the plan nothing.
productSchema.index({ country: 1, priority: -1, next_refresh_at: 1 }, { name: 'plan_due' });
// Adaptive scheduling: the due products that change fastest, so the planner weighs them even when
// a long backlog of slower ones is more overdue.
productSchema.index({ country: 1, priority: -1, change_rate: -1, next_refresh_at: 1 }, { name: 'plan_rate' });
// Adaptive scheduling: the due products seen longest ago, so that none waits past its priority's
// interval however little a refresh of it is worth (src/scheduling/due.ts).
productSchema.index({ country: 1, priority: -1, last_attempt_at: 1 }, { name: 'plan_stale' });
// Each account's due products, for its fair share of a plan when the country is short of quota.
productSchema.index({ country: 1, owners: 1, priority: -1, next_refresh_at: 1 }, { name: 'plan_owner' });

/** The deals index of one figure (src/catalog/deals.ts). */
export function dealsIndexName(field: DealField): string {
  return `deals_${field}`;
}
/** The same figure's deals under one browse node. */
export function dealsNodeIndexName(field: DealField): string {
  return `deals_node_${field}`;
}
// The deals feed: per figure, a country's deals by drop, largest first; price and rank in the key so
// that those filters are judged on the index, reading only the documents of the page. Partial: a
// product is in a figure's indexes only while it is a deal by it, so each stays small. The second
// index leads with the browse node (one entry per node a deal lists), so a node's page is a walk too.
for (const field of DEAL_FIELDS) {
  const drop = `drop.${field}`;
  const partialFilterExpression = { [drop]: { $gt: 0 } };
  const order = { [drop]: -1, 'price.amount': 1, sales_rank: 1, _id: 1 } as const;
  productSchema.index({ country: 1, ...order }, { name: dealsIndexName(field), partialFilterExpression });
  productSchema.index({ country: 1, 'browse_nodes.id': 1, ...order }, { name: dealsNodeIndexName(field), partialFilterExpression });
}

export type ProductModel = Model<ProductFields>;
export type ProductDoc = HydratedDocument<ProductFields>;

export function productModel(conn: Connection): ProductModel {
  return (conn.models.Product as ProductModel | undefined) ?? conn.model<ProductFields>('Product', productSchema);
}
