/**
 * The synthetic catalogue: a pure function of (seed, marketplace, identifier, time epoch). Nothing
 * is stored per ASIN, so every well-formed ASIN and EAN-13 is answered. Titles, brands and codes are
 * fixed for a seed; prices, availability, Buy Box and ranks change once per epoch of the product's
 * own length (see `schedule`), so refreshes see change, some products often and most rarely.
 */
import type { Country } from '../catalog/identifiers.js';
import type { Availability, Price } from '../catalog/product.js';
import { normalizeItem } from '../upstream/creators/normalize.js';
import { readItems } from '../upstream/creators/read.js';
import { MARKETPLACES } from '../upstream/marketplaces.js';
import { CodeMap, eanCheckDigit } from './codes.js';
import { between, pick, unit } from './hash.js';
import { EN, JA, type Vocabulary } from './vocabulary.js';

export interface CatalogOptions {
  readonly seed: string;
  readonly notFoundRate: number;
  readonly notAccessibleRate: number;
  /** The mean over products of the interval between a product's changes (see INTERVAL_SIGMA). */
  readonly driftMs: number;
}

export type Lookup = { readonly kind: 'found'; readonly item: Record<string, unknown> } | { readonly kind: 'not_found' | 'not_accessible' };

/** When a product's offer changes: at `k * intervalMs - phaseMs` for every whole k. */
export interface Schedule {
  readonly intervalMs: number;
  readonly phaseMs: number;
}

/** One change of what a refresh sees, as our client normalises it: the new values from `at` on. */
export interface TruthChange {
  readonly at: number;
  readonly price: Price | null;
  readonly availability: Availability;
}

export type Truth =
  | {
      readonly kind: 'found';
      readonly meanIntervalMs: number;
      readonly changes: TruthChange[];
      /** More changes may lie in the range than are listed (at most `limit`, the first ones). */
      readonly truncated: boolean;
    }
  | { readonly kind: 'not_found' | 'not_accessible' };

export interface SimNode {
  id: string;
  displayName: string;
  contextFreeName: string;
  isRoot: boolean;
  ancestor?: Omit<SimNode, 'children' | 'isRoot'>;
  children?: { id: string; displayName: string; contextFreeName: string }[];
}

/** Results a search or browse node lists at most (10 pages of 10). */
export const MAX_RESULTS = 100;
/**
 * Share of items with a listing that shows no amount or currency (the SDK marks both optional):
 * in each of the item's epochs one of their listings, drawn anew, comes without them.
 */
const UNPRICED_SHARE = 0.03;

/**
 * How fast each product moves. Product p changes at the instants `k * m_p - phase_p` (k whole):
 * fixed epochs of its own length m_p, shifted by a phase drawn uniformly in [0, m_p) so that
 * products do not change all at once. A new epoch draws price factor, stock, listings and Buy Box
 * anew, so the price almost always changes with it.
 *
 * m_p = driftMs * w_p, with w_p = clamp(c * exp(σ z_p), lo, hi): z_p a standard normal drawn from
 * the seed (Box–Muller on two hashes), σ = INTERVAL_SIGMA (lognormal, heavy-tailed both ways),
 * lo = max(1/60, 1 s / driftMs), hi = 50, and c solved once so that E[w] = 1 with the clamps (about
 * exp(-σ²/2) without them). So `driftMs` (SIMULATOR_DRIFT_MS) is the MEAN INTERVAL over products,
 * not the inverse of the mean rate: the median interval is about a third of it, and the mean rate
 * over products, E[1/m], is several times 1/driftMs (exp(σ²) ≈ 9.5 without the clamps, about 8
 * with them), most of it from the few fast products; the top tenth by rate make about half of all
 * changes. With driftMs = 1 h, intervals run from 1 min to 50 h.
 */
const INTERVAL_SIGMA = 1.5;
const MIN_INTERVAL_SHARE = 1 / 60;
const MIN_INTERVAL_MS = 1000;
const MAX_INTERVAL_SHARE = 50;

/** The standard normal distribution function (Abramowitz–Stegun 7.1.26, error below 1.5e-7). */
function normalCdf(x: number): number {
  const t = 1 / (1 + (0.3275911 * Math.abs(x)) / Math.SQRT2);
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const tail = 0.5 * poly * Math.exp((-x * x) / 2);
  return x >= 0 ? 1 - tail : tail;
}

/** E[clamp(c * exp(σZ), lo, hi)] for a standard normal Z. */
function clampedLognormalMean(c: number, sigma: number, lo: number, hi: number): number {
  const a = Math.log(lo / c) / sigma;
  const b = Math.log(hi / c) / sigma;
  const inside = c * Math.exp((sigma * sigma) / 2) * (normalCdf(b - sigma) - normalCdf(a - sigma));
  return lo * normalCdf(a) + inside + hi * (1 - normalCdf(b));
}

/** The scale c for which E[clamp(c * exp(σZ), lo, hi)] = 1 (lo ≤ 1 ≤ hi), by bisection on log c. */
function unitMeanScale(sigma: number, lo: number, hi: number): number {
  let low = Math.log(1e-9);
  let high = Math.log(hi);
  for (let i = 0; i < 200; i++) {
    const mid = (low + high) / 2;
    if (clampedLognormalMean(Math.exp(mid), sigma, lo, hi) < 1) low = mid;
    else high = mid;
  }
  return Math.exp((low + high) / 2);
}

/** Formatters by currency: building one per listing costs more than the rest of the listing. */
const FORMATS = new Map<string, Intl.NumberFormat>();
function formatMoney(amount: number, currency: string): string {
  let f = FORMATS.get(currency);
  if (!f) FORMATS.set(currency, (f = new Intl.NumberFormat(currency === 'JPY' ? 'ja-JP' : 'en-US', { style: 'currency', currency })));
  return f.format(amount);
}

export class SyntheticCatalog {
  readonly #maps = new Map<Country, CodeMap>();
  readonly #lo: number;
  readonly #scale: number;

  constructor(readonly opts: CatalogOptions) {
    this.#lo = Math.min(1, Math.max(MIN_INTERVAL_SHARE, MIN_INTERVAL_MS / opts.driftMs));
    this.#scale = unitMeanScale(INTERVAL_SIGMA, this.#lo, MAX_INTERVAL_SHARE);
  }

  #map(country: Country): CodeMap {
    let m = this.#maps.get(country);
    if (!m) this.#maps.set(country, (m = new CodeMap(this.opts.seed, country)));
    return m;
  }

  #words(country: Country): Vocabulary {
    return country === 'JP' ? JA : EN;
  }

  /** ASINs that list this EAN-13, in their canonical order. */
  asinsForEan(country: Country, ean: string): string[] {
    return this.#map(country).asinsOf(ean);
  }

  lookup(country: Country, asin: string, now: number, partnerTag: string): Lookup {
    const ean = this.#map(country).eanOf(asin);
    const missing = this.#missing(country, asin, ean);
    if (missing) return { kind: missing };
    return { kind: 'found', item: this.#item(country, asin, ean, this.epochAt(country, asin, now), partnerTag) };
  }

  #missing(country: Country, asin: string, ean: string | undefined): 'not_found' | 'not_accessible' | undefined {
    // Items that an EAN lists always exist: a code search never leads to a dead ASIN.
    if (ean !== undefined) return undefined;
    const u = unit(this.opts.seed, country, 'exists', asin);
    if (u < this.opts.notFoundRate) return 'not_found';
    if (u < this.opts.notFoundRate + this.opts.notAccessibleRate) return 'not_accessible';
    return undefined;
  }

  /** The product's epochs (see INTERVAL_SIGMA): whole milliseconds, the interval at least 1 s. */
  schedule(country: Country, asin: string): Schedule {
    const { seed, driftMs } = this.opts;
    const u1 = 1 - unit(seed, country, asin, 'pace', 1); // in (0, 1]
    const u2 = unit(seed, country, asin, 'pace', 2);
    const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
    const w = Math.min(MAX_INTERVAL_SHARE, Math.max(this.#lo, this.#scale * Math.exp(INTERVAL_SIGMA * z)));
    const intervalMs = Math.max(MIN_INTERVAL_MS, Math.round(driftMs * w));
    return { intervalMs, phaseMs: Math.floor(unit(seed, country, asin, 'phase') * intervalMs) };
  }

  /** The product's epoch at `now`: its offer is the same throughout an epoch. */
  epochAt(country: Country, asin: string, now: number): number {
    const { intervalMs, phaseMs } = this.schedule(country, asin);
    return Math.floor((now + phaseMs) / intervalMs);
  }

  /**
   * Ground truth for tests and benchmarks: the instants in [since, until] at which the price or
   * availability a refresh sees (through our client's normaliser) changes, with the new values, in
   * time order; at most `limit` of them.
   */
  truth(country: Country, asin: string, since: number, until: number, limit: number): Truth {
    const ean = this.#map(country).eanOf(asin);
    const missing = this.#missing(country, asin, ean);
    if (missing) return { kind: missing };
    const { intervalMs, phaseMs } = this.schedule(country, asin);
    const words = this.#words(country);
    // Price and availability come from the listings alone: the rest of the item is left out.
    const seen = (epoch: number): { price: Price | null; availability: Availability } => {
      const [read] = readItems([{ asin, offersV2: { listings: this.#listings(country, asin, epoch, words) } }], []);
      const { price, availability } = normalizeItem(read!);
      return { price, availability };
    };
    const changes: TruthChange[] = [];
    let truncated = false;
    // The first epoch that starts at or after `since`, compared with the one before it.
    let k = Math.ceil((since + phaseMs) / intervalMs);
    let prev = seen(k - 1);
    // Nearly every epoch is a change; the bound only keeps a wide range from running on.
    const lastEpoch = k + 20 * limit;
    for (; k * intervalMs - phaseMs <= until; k++) {
      if (k === lastEpoch) {
        truncated = true;
        break;
      }
      const cur = seen(k);
      if (
        cur.availability !== prev.availability ||
        cur.price?.amount !== prev.price?.amount ||
        cur.price?.currency !== prev.price?.currency
      ) {
        if (changes.length === limit) {
          truncated = true;
          break;
        }
        changes.push({ at: k * intervalMs - phaseMs, ...cur });
      }
      prev = cur;
    }
    return { kind: 'found', meanIntervalMs: intervalMs, changes, truncated };
  }

  /** Every ASIN a keyword search finds (at most 100); a code search adds a few unrelated hits. */
  search(country: Country, keywords: string): string[] {
    const code = /^\d{12}$/.test(keywords) ? `0${keywords}` : keywords;
    const { seed } = this.opts;
    if (/^\d{13}$/.test(code)) {
      const hits = this.asinsForEan(country, code);
      const noise = Array.from({ length: between(0, 2, seed, country, 'noise-count', code) }, (_, k) =>
        this.#listed(country, `noise:${code}`, k),
      );
      // Unrelated hits come first or last, so a client that keeps the first result is caught out.
      return unit(seed, country, 'noise-first', code) < 0.5 ? [...noise, ...hits] : [...hits, ...noise];
    }
    const key = keywords.trim().toLowerCase();
    return Array.from({ length: between(0, MAX_RESULTS, seed, country, 'kw-count', key) }, (_, i) => this.#listed(country, `kw:${key}`, i));
  }

  /** The ASINs of a browse node: half the nodes fill all 10 pages, the rest fewer. */
  browse(country: Country, nodeId: string): string[] {
    const { seed } = this.opts;
    const n =
      unit(seed, country, 'node-full', nodeId) < 0.5 ? MAX_RESULTS : between(0, MAX_RESULTS - 1, seed, country, 'node-count', nodeId);
    return Array.from({ length: n }, (_, i) => this.#listed(country, `node:${nodeId}`, i));
  }

  /**
   * The tree: a node's parent is its id without the last digit, its children its id with one more
   * digit; one- and two-digit ids are roots.
   */
  node(country: Country, id: string, withAncestor = true, withChildren = true): SimNode {
    const name = this.#nodeName(country, id);
    const isRoot = id.length <= 2;
    const node: SimNode = { id, displayName: name, contextFreeName: name, isRoot };
    if (withAncestor && !isRoot) {
      const { isRoot: _r, children: _c, ...parent } = this.node(country, id.slice(0, -1), true, false);
      node.ancestor = parent;
    }
    if (withChildren && id.length < 19) {
      const count = between(0, 5, this.opts.seed, country, 'children', id);
      node.children = Array.from({ length: count }, (_, k) => {
        const cid = `${id}${k}`;
        const cname = this.#nodeName(country, cid);
        return { id: cid, displayName: cname, contextFreeName: cname };
      });
    }
    return node;
  }

  #nodeName(country: Country, id: string): string {
    return pick(this.#words(country).categories, this.opts.seed, country, 'node-name', id);
  }

  /** The index-th ASIN of a listing: the first ASIN of a synthetic EAN that has one. */
  #listed(country: Country, key: string, index: number): string {
    for (let attempt = 0; ; attempt++) {
      const prefix =
        country === 'JP'
          ? pick(['45', '49'], this.opts.seed, key, index, attempt, 'p')
          : pick(['00', '01', '06', '08'], this.opts.seed, key, index, attempt, 'p');
      const body = String(between(0, 9_999_999_999, this.opts.seed, country, key, index, attempt)).padStart(10, '0');
      const first12 = prefix + body;
      const asins = this.asinsForEan(country, first12 + eanCheckDigit(first12));
      if (asins[0]) return asins[0];
    }
  }

  #item(country: Country, asin: string, ean: string | undefined, epoch: number, partnerTag: string): Record<string, unknown> {
    const { seed } = this.opts;
    const w = this.#words(country);
    const m = MARKETPLACES[country];
    const s = (...parts: (string | number)[]): number => unit(seed, country, asin, ...parts);
    const brand = pick(w.brands, seed, country, asin, 'brand');
    const title = [
      brand,
      pick(w.products, seed, country, asin, 'product'),
      pick(w.variants, seed, country, asin, 'variant'),
      pick(w.colours, seed, country, asin, 'colour'),
    ].join(w.separator);
    const category = pick(w.categories, seed, country, asin, 'category');
    const nodeId = String(between(1_000_000_000, 9_999_999_999, seed, country, asin, 'node'));
    const baseRank = Math.max(1, Math.round(Math.exp(s('rank') * Math.log(500_000))));
    const rank = Math.max(1, Math.round(baseRank * (0.7 + 0.6 * s('rank', epoch))));
    const image = (size: number): Record<string, unknown> => ({
      url: `https://m.media-amazon.com/images/I/${asin}${Math.floor(s('img') * 1e6)}._SL${size}_.jpg`,
      height: size,
      width: size,
    });
    return {
      asin,
      detailPageURL: `https://${m.host}/dp/${asin}?tag=${encodeURIComponent(partnerTag)}&linkCode=ogi&th=1&psc=1`,
      itemInfo: {
        title: { displayValue: title, label: 'Title', locale: m.language },
        byLineInfo: { brand: { displayValue: brand, label: 'Brand', locale: m.language } },
        ...(ean ? { externalIds: this.#externalIds(country, asin, ean) } : {}),
      },
      images: { primary: { small: image(75), medium: image(160), large: image(500) } },
      browseNodeInfo: {
        browseNodes: [
          { id: nodeId, displayName: category, contextFreeName: category, isRoot: false, salesRank: Math.max(1, Math.round(rank / 20)) },
        ],
        websiteSalesRank: { salesRank: rank, displayName: category, contextFreeName: category },
      },
      offersV2: { listings: this.#listings(country, asin, epoch, w) },
    };
  }

  /**
   * The code an item lists. A code with a leading 0 is a 12-digit UPC as well (UPC-A), and Amazon
   * lists such codes in either form: here as a UPC, as a 12-digit value in the EAN list, or both.
   * Every other code is an EAN-13.
   */
  #externalIds(country: Country, asin: string, ean: string): Record<string, unknown> {
    const eans = (values: string[]) => ({ eans: { displayValues: values, label: 'EAN', locale: 'en_US' } });
    if (country !== 'US' || !ean.startsWith('0')) return eans([ean]);
    const upc = ean.slice(1);
    const upcs = { upcs: { displayValues: [upc], label: 'UPC', locale: 'en_US' } };
    const form = unit(this.opts.seed, country, asin, 'code-form');
    if (form < 1 / 3) return upcs;
    if (form < 2 / 3) return eans([upc]);
    return { ...eans([ean]), ...upcs };
  }

  #listings(country: Country, asin: string, epoch: number, w: Vocabulary): Record<string, unknown>[] {
    const { seed } = this.opts;
    const s = (...parts: (string | number)[]): number => unit(seed, country, asin, ...parts);
    const stock = s('stock', epoch);
    if (stock < 0.06) return []; // nobody sells it right now: the "no offer" state
    const type =
      stock < 0.08
        ? 'OUT_OF_STOCK'
        : stock < 0.1
          ? 'AVAILABLE_DATE'
          : stock < 0.12
            ? 'LEADTIME'
            : stock < 0.2
              ? 'IN_STOCK_SCARCE'
              : 'IN_STOCK';
    const currency = MARKETPLACES[country].currency;
    const jp = currency === 'JPY';
    const base = Math.exp(Math.log(jp ? 300 : 2) + s('price') * Math.log(100)); // ¥300–¥30,000; $2–$200
    const factor = 0.85 + 0.3 * s('price', epoch);
    const count = between(1, 3, seed, country, asin, 'listings', epoch);
    const winner = s('buybox', epoch) < 0.85 ? between(0, count - 1, seed, country, asin, 'winner', epoch) : -1;
    const unpriced = s('unpriced') < UNPRICED_SHARE ? between(0, count - 1, seed, country, asin, 'unpriced', epoch) : -1;
    const listings = Array.from({ length: count }, (_, k) => {
      const raw = base * factor * (1 + 0.08 * k * s('spread', k, epoch));
      const amount = jp ? Math.round(raw / 10) * 10 : Math.round(raw * 100) / 100;
      const displayAmount = formatMoney(amount, currency);
      return {
        availability: {
          type,
          message: type === 'OUT_OF_STOCK' ? (jp ? '現在在庫切れです。' : 'Currently unavailable.') : jp ? '在庫あり。' : 'In Stock',
          minOrderQuantity: 1,
          maxOrderQuantity: 10,
        },
        condition: { value: 'New' },
        isBuyBoxWinner: k === winner,
        merchantInfo:
          k === 0
            ? { id: `A${country}AMAZON00`, name: w.amazonMerchant }
            : { id: `A${country}MERCH${k}`, name: pick(w.merchants, seed, asin, k) },
        // Without amount and currency: no money at all, or only its display text.
        price:
          k !== unpriced
            ? { money: { amount, currency, displayAmount } }
            : s('unpriced-form', epoch) < 0.5
              ? {}
              : { money: { displayAmount } },
        violatesMAP: false,
      };
    });
    // The upstream does not sort listings by price or put the Buy Box first; neither do we.
    const order = new Map(listings.map((l) => [l, unit(seed, asin, epoch, l.merchantInfo.id)]));
    return listings.sort((a, b) => order.get(a)! - order.get(b)!);
  }
}
