/**
 * Bulk seeding straight into MongoDB: tens of thousands of watched products through the HTTP API
 * would measure the API, not the benchmark's subject, and take longer than the benchmark itself.
 * Documents are written with the driver in the shape the schemas give them (every field present).
 */
import { Types, type Connection } from 'mongoose';
import { dayNumber } from '../../src/core/price-levels.js';
import { dealFieldsOf } from '../../src/catalog/writes.js';
import { orderedSearchKeys } from '../../src/search/ordered-keys.js';
import type { Country } from '../../src/core/identifiers.js';
import { MARKETPLACES, type Marketplace } from '../../src/upstream/marketplaces.js';

/** A deterministic, well-formed ASIN per index (the simulator knows every well-formed ASIN). */
export function asinOf(i: number): string {
  return `B0${i.toString(36).toUpperCase().padStart(8, '0')}`;
}

/** Inserts in chunks, unordered: one round trip per chunk, none for a whole million at once. */
export async function insertChunks(
  conn: Connection,
  collection: string,
  count: number,
  make: (i: number) => Record<string, unknown>,
  chunk = 5_000,
): Promise<void> {
  const coll = conn.db!.collection(collection);
  for (let start = 0; start < count; start += chunk) {
    const docs: Record<string, unknown>[] = [];
    for (let i = start; i < Math.min(count, start + chunk); i++) docs.push(make(i));
    await coll.insertMany(docs, { ordered: false });
  }
}

export interface ProductSeed {
  readonly country: string;
  readonly asin: string;
  readonly priority: 0 | 1 | null;
  readonly nextRefreshAt: Date | null;
  readonly createdAt: Date;
  /** A fetched product (title, price, updated_at), as the world list shows; else pending. */
  readonly fetched?: { readonly title: string; readonly brand: string; readonly updatedAt: Date; readonly amount: number };
  /**
   * The deals feed's figures as refreshes would have left them: a fetched product's price 0–39 %
   * (by its amount) under its level of the 29 days before, so its drops spread over every figure.
   */
  readonly deals?: boolean;
}

function dealFields(amount: number, at: Date): Record<string, unknown> {
  const today = dayNumber(at);
  const before = Math.round(amount * (1 + (amount % 40) / 100));
  const days = Array.from({ length: 29 }, (_, k) => ({ d: today - 29 + k, lo: before, hi: before, sum: before, n: 1 }));
  return dealFieldsOf(days, amount, at);
}

export function productDoc(p: ProductSeed): Record<string, unknown> {
  const f = p.fetched;
  const market = MARKETPLACES[p.country as Country] as Marketplace | undefined;
  if (!market) throw new Error(`BENCH_COUNTRIES: ${p.country} is not a marketplace`);
  return {
    _id: new Types.ObjectId(),
    country: p.country,
    asin: p.asin,
    ean: [],
    title: f?.title ?? null,
    brand: f?.brand ?? null,
    image: null,
    url: f ? `https://${market.host}/dp/${p.asin}` : null,
    price: f ? { amount: f.amount, currency: market.currency } : null,
    availability: f ? 'in_stock' : 'unknown',
    sales_rank: null,
    browse_nodes: [],
    raw: null,
    search_keys: f ? orderedSearchKeys(f.title, f.brand) : [],
    status: f ? 'ok' : 'pending',
    last_error: null,
    priority: p.priority,
    next_refresh_at: p.nextRefreshAt,
    last_attempt_at: f ? f.updatedAt : null,
    plan_token: null,
    created_at: p.createdAt,
    updated_at: f?.updatedAt ?? null,
    ...(f && p.deals ? dealFields(f.amount, f.updatedAt) : {}),
  };
}

export function watchDoc(userId: Types.ObjectId, asin: string, priority: 0 | 1, at: Date): Record<string, unknown> {
  return {
    _id: new Types.ObjectId(),
    user_id: userId,
    kind: 'asin',
    key: asin,
    priority,
    last_crawl_at: null,
    last_crawl_count: null,
    source: 'api',
    created_at: at,
    updated_at: at,
  };
}

/** Priority of the i-th of n watched ASINs: the first share × n are priority 1 (spread evenly). */
export function priorityOf(i: number, share: number): 0 | 1 {
  return Math.floor((i + 1) * share) > Math.floor(i * share) ? 1 : 0;
}

const WORDS = [
  'wireless',
  'charger',
  'kettle',
  'headphones',
  'keyboard',
  'camera',
  'lens',
  'bottle',
  'backpack',
  'monitor',
  'speaker',
  'router',
  'blender',
  'lamp',
  'notebook',
  'pencil',
  'mouse',
  'cable',
  'adapter',
  'tripod',
  'jacket',
  'shoes',
];
const BRANDS = ['Acme', 'Globex', 'Initech', 'Umbrella', 'Hooli', 'Stark'];

/** A product title of three words from a small vocabulary, so that searches have many hits. */
export function titleOf(i: number): { title: string; brand: string } {
  const w = (k: number): string => WORDS[(i * 7 + k * 13 + Math.floor(i / WORDS.length) * k) % WORDS.length]!;
  return { title: `${BRANDS[i % BRANDS.length]} ${w(1)} ${w(2)} ${w(3)} model ${i}`, brand: BRANDS[i % BRANDS.length]! };
}
