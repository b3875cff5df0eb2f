import mongoose, { type Connection } from 'mongoose';
import type { Country } from '../core/identifiers.js';
import { identifierOf } from './world-query.js';
import { PRODUCT_SHOWN_FIELDS, type ShownProduct } from './present.js';
import { TotalCache } from './total-cache.js';
import { PRODUCT_SEARCH_INDEX, productModel } from '../models/product.js';
import { orderedSearchFilter, orderedSearchTerms } from '../search/ordered-keys.js';
import { SEARCH_KEYS_FIELD } from '../search/keys.js';
import { LIST_QUERY_MAX_MS } from '../db/mongo.js';
import { findPage, offsetIn } from '../db/page.js';
import { historyPointModel, type HistoryPointFields } from '../models/history-point.js';
import { LAGGING_READ } from '../db/read-preference.js';

export type ListedProduct = ShownProduct;

export interface ProductPage {
  readonly items: ListedProduct[];
  readonly total: number;
}

interface PageRequest {
  readonly countries: readonly Country[];
  readonly page: number;
  readonly limit: number;
}

// Only products the upstream has answered for at least once are listed; a watched product that is
// still pending (or unknown upstream) is read by its ASIN. Written as a range over every date (a
// range never crosses BSON type brackets, so null is out), not `$type: 'date'`: a range bounds the
// index walk on every server, so a list's total is counted from the index without reading a product.
const EARLIEST_DATE = new Date(-8_640_000_000_000_000);
const fetched = () => ({ updated_at: mongoose.trusted({ $gte: EARLIEST_DATE }) });

export interface HistoryRange {
  readonly since?: Date;
  readonly until?: Date;
}

/** Points read as they are taken; closing it early frees the server's cursor. */
export interface HistoryCursor extends AsyncIterable<HistoryPointFields> {
  close(): Promise<void>;
}

/** Points of one product, bounded by the range when it has one. */
function historyFilter(country: Country, asin: string, range: HistoryRange) {
  const at: Record<string, Date> = {};
  if (range.since) at.$gte = range.since;
  // Times are written to the second: `until` takes in the whole second it names.
  if (range.until) at.$lt = new Date(range.until.getTime() + 1_000);
  return { country, asin, ...(range.since || range.until ? { at: mongoose.trusted(at) } : {}) };
}

/**
 * Most products a search term is counted to when choosing which one bounds the walk: past it, a
 * term is common enough that any of them ends a page quickly.
 */
const TERM_CENSUS_CAP = 200;

/** Points per batch of an export's cursor: a round trip per thousand points (about 190 KB of BSON). */
const HISTORY_EXPORT_BATCH = 1_000;
/**
 * MongoDB counts a cursor's maxTimeMS over all its batches: a whole history (HISTORY_DAYS of changes)
 * gets longer than one page of a list, still bounded so a stuck read cannot hold the server.
 */
const HISTORY_EXPORT_MAX_MS = 10 * LIST_QUERY_MAX_MS;

/**
 * Reads of the world catalogue, shared by every user: lists newest first, one product by ASIN or by
 * JAN/EAN. A list's total is counted once per filter per WORLD_TOTAL_TTL (counting 10^6 matches
 * costs more than the page); a page that is not full is its own exact total. Every read carries
 * LIST_QUERY_MAX_MS, so no request holds MongoDB for long.
 */
export class WorldCatalog {
  readonly #totals: TotalCache;

  constructor(
    private readonly mongo: Connection,
    totalTtlMs: number,
    private readonly countries: readonly Country[],
  ) {
    this.#totals = new TotalCache(totalTtlMs);
  }

  /** Products by update time; `search` matches title words, or an ASIN or a JAN/EAN exactly. */
  async list(req: PageRequest & { readonly search?: string }): Promise<ProductPage> {
    const filter: Record<string, unknown> = { country: mongoose.trusted({ $in: req.countries }), ...fetched() };
    if (req.search === undefined || req.search.trim() === '')
      return this.page(filter, 'updated_at', req, this.newestFirst('updated_at', req));
    const terms = orderedSearchTerms(req.search);
    const id = identifierOf(req.search);
    if (!id.asin && !id.ean) {
      if (terms.kind !== 'match') return { items: [], total: 0 };
      // Walked from the rarest term's newest product: a page reads about its own length of a common
      // word's matches, and a rare word's matches only.
      const words = orderedSearchFilter(await this.rarestFirst(terms.keys), terms.ranges);
      return this.page({ ...filter, ...words }, 'updated_at', req, PRODUCT_SEARCH_INDEX);
    }
    // An ASIN or a JAN/EAN: its few products by their own indexes, or titles that name it.
    const alternatives: Record<string, unknown>[] = [];
    if (terms.kind === 'match') alternatives.push(orderedSearchFilter(terms.keys, terms.ranges));
    if (id.asin) alternatives.push({ asin: id.asin });
    if (id.ean) alternatives.push({ ean: id.ean });
    return this.page({ ...filter, $or: alternatives }, 'updated_at', req);
  }

  /** Products by creation time, created on or after `since`. */
  async created(req: PageRequest & { readonly since?: Date }): Promise<ProductPage> {
    const filter: Record<string, unknown> = { country: mongoose.trusted({ $in: req.countries }), ...fetched() };
    if (req.since) filter.created_at = mongoose.trusted({ $gte: req.since });
    return this.page(filter, 'created_at', req, this.newestFirst('created_at', req));
  }

  /**
   * A query's keys, the one with the fewest products first (each read from the index up to
   * TERM_CENSUS_CAP, ids only; longer keys first among those past it): the walk follows the first
   * key's products, so "model 1234" reads the few with 1234, not every model. One key needs no census.
   */
  private async rarestFirst(keys: readonly string[]): Promise<readonly string[]> {
    if (keys.length < 2) return keys;
    const products = productModel(this.mongo);
    // A find that stops at its limit, not a count: a count's limit is not pushed into the walk everywhere.
    const counts = await Promise.all(
      keys.map(async (key) => {
        const ids = await products
          .find({ [SEARCH_KEYS_FIELD]: key }, { _id: 1 })
          .hint(PRODUCT_SEARCH_INDEX)
          .limit(TERM_CENSUS_CAP)
          .setOptions(LAGGING_READ)
          .maxTimeMS(LIST_QUERY_MAX_MS)
          .lean();
        return ids.length;
      }),
    );
    return keys
      .map((key, i) => ({ key, n: counts[i]!, length: [...key].length }))
      .sort((a, b) => a.n - b.n || b.length - a.length)
      .map((t) => t.key);
  }

  /**
   * Every configured country at once: the country condition holds for (nearly) every product, so
   * the list is walked in its own order and stops at the page's end. (Per country, the server
   * walks `{country, <field>, _id}`; for a few of several, MongoDB merges their walks in order.)
   */
  private newestFirst(field: 'updated_at' | 'created_at', req: PageRequest): Record<string, 1 | -1> | undefined {
    const all = this.countries.length > 1 && this.countries.every((c) => req.countries.includes(c));
    return all ? { [field]: -1, _id: -1 } : undefined;
  }

  /** The product in each of `countries` that has it, pending and not-found ones too. */
  byAsin(asin: string, countries: readonly Country[]): Promise<ListedProduct[]> {
    return productModel(this.mongo)
      .find({ asin, country: mongoose.trusted({ $in: countries }) })
      .sort({ country: 1 })
      .select(PRODUCT_SHOWN_FIELDS)
      .maxTimeMS(LIST_QUERY_MAX_MS)
      .lean();
  }

  byEan(ean: string, countries: readonly Country[]): Promise<ListedProduct[]> {
    return productModel(this.mongo)
      .find({ ean, country: mongoose.trusted({ $in: countries }) })
      .sort({ country: 1, asin: 1 })
      .select(PRODUCT_SHOWN_FIELDS)
      .maxTimeMS(LIST_QUERY_MAX_MS)
      .lean();
  }

  /**
   * A watched product's history points in a time range, oldest first; null when nobody watches
   * the product in that country (or it is not known at all). The range and the page run on the
   * (country, asin, at) index.
   */
  async history(
    country: Country,
    asin: string,
    req: HistoryRange & { readonly page: number; readonly limit: number },
  ): Promise<{ items: HistoryPointFields[]; total: number } | null> {
    if (!(await this.watched(country, asin))) return null;
    return findPage(historyPointModel(this.mongo), historyFilter(country, asin, req), { at: 1 }, req);
  }

  /**
   * The same points as `history`, every one in the range, as a cursor read batch by batch (an
   * export sends them as it reads them); null when nobody watches the product in that country.
   * The caller closes it.
   */
  async historyCursor(country: Country, asin: string, range: HistoryRange): Promise<HistoryCursor | null> {
    if (!(await this.watched(country, asin))) return null;
    return this.historyQuery(country, asin, range).cursor({ batchSize: HISTORY_EXPORT_BATCH });
  }

  /** The query `historyCursor` reads: walks the (country, asin, at) index in order, no sort in memory. */
  historyQuery(country: Country, asin: string, range: HistoryRange) {
    return historyPointModel(this.mongo)
      .find(historyFilter(country, asin, range))
      .sort({ at: 1 })
      .maxTimeMS(HISTORY_EXPORT_MAX_MS)
      .lean<HistoryPointFields[]>();
  }

  private async watched(country: Country, asin: string): Promise<boolean> {
    const found = await productModel(this.mongo)
      .exists({ country, asin, priority: mongoose.trusted({ $ne: null }) })
      .maxTimeMS(LIST_QUERY_MAX_MS);
    return found !== null;
  }

  private async page(
    filter: Record<string, unknown>,
    field: 'updated_at' | 'created_at',
    req: PageRequest,
    hint?: string | Record<string, 1 | -1>,
  ): Promise<ProductPage> {
    const products = productModel(this.mongo);
    const offset = (req.page - 1) * req.limit;
    // The filter's JSON names it exactly: the server builds every part of it from parsed input.
    const key = `${field}:${JSON.stringify(filter)}`;
    const count = () => {
      const counted = products.countDocuments(filter).setOptions(LAGGING_READ).maxTimeMS(LIST_QUERY_MAX_MS);
      return hint ? counted.hint(hint) : counted;
    };
    if (offset > 0) {
      // A later page learns the list's length first, so a page past the end reads no data and a deep
      // one inside the list is refused before it is read. A kept total that puts the page past the
      // end may be out of date (products were added since): it is counted again before it decides.
      const known = await this.#totals.total(key, count, offset + 1);
      if (offsetIn(req, known) === null) return { items: [], total: known };
    }
    const query = products.find(filter);
    if (hint) query.hint(hint);
    const items = await query
      .sort({ [field]: -1, _id: -1 })
      .skip(offset)
      .limit(req.limit)
      .select(PRODUCT_SHOWN_FIELDS)
      .setOptions(LAGGING_READ)
      .maxTimeMS(LIST_QUERY_MAX_MS)
      .lean();
    if (items.length < req.limit && (items.length > 0 || offset === 0)) {
      // A page that is not full ends the list: its total needs no count, and is kept for the pages before it.
      const total = offset + items.length;
      this.#totals.set(key, total);
      return { items, total };
    }
    // A kept total below what this page shows is out of date: count again. (A page past the end
    // shows nothing, so it proves nothing either.)
    const total = await this.#totals.total(key, count, items.length ? offset + items.length : 0);
    return { items, total };
  }
}
