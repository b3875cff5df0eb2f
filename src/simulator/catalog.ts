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
import { currencyDigits, MARKETPLACES } from '../upstream/marketplaces.js';
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

/**
 * When a product's offer changes: time is cut into slots of `slotMs`, shifted by `phaseMs`, and
 * each slot starts a change with probability 1 / SLOTS_PER_CHANGE, so changes come on average
 * every `intervalMs`, at irregular gaps (geometric in slots: nearly memoryless, like real repricing).
 */
export interface Schedule {
  readonly intervalMs: number;
  readonly slotMs: number;
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
 * How fast each product moves: most products change rarely, a few every few minutes. A product's
 * mean interval between changes is m_p = driftMs * w_p with w_p = max(lo, 3 u_p²), u_p uniform in
 * [0, 1) drawn from the seed: its change rate, 1 / m_p, has a Pareto tail of index 1/2 (the share
 * of products changing faster than r falls as r^(-1/2)). E[3u²] = 1, so `driftMs`
 * (SIMULATOR_DRIFT_MS) is the mean interval over products; the median is 3/4 of it, one product in
 * ten changes 33 times as often as 1 / driftMs or more, one in thirty 300 times (up to the floor
 * lo = max(1 s / driftMs, 1/1000)). With driftMs = 1 h: a median of 45 min, a tenth under 2 min, and
 * up to 3 h. Change instants are drawn slot by slot (see Schedule), and each change draws price
 * factor, stock, listings and Buy Box anew, so the price almost always moves with it.
 */
const MIN_INTERVAL_SHARE = 1 / 1_000;
const MIN_INTERVAL_MS = 1_000;
/** Slots per mean interval: more makes the gaps closer to exponential, and reading an epoch costlier. */
const SLOTS_PER_CHANGE = 4;
/**
 * How far back an epoch is looked for: no change in this many slots has probability
 * (3/4)^200 ≈ 1e-25, and even then the answer stays deterministic.
 */
const MAX_SLOTS_BACK = 200;

/** Formatters by marketplace: building one per listing costs more than the rest of the listing. */
const FORMATS = new Map<Country, Intl.NumberFormat>();
function formatMoney(country: Country, amount: number): string {
  let f = FORMATS.get(country);
  if (!f) {
    const { language, currency } = MARKETPLACES[country];
    FORMATS.set(country, (f = new Intl.NumberFormat(language.replace('_', '-'), { style: 'currency', currency })));
  }
  return f.format(amount);
}

export class SyntheticCatalog {
  readonly #maps = new Map<Country, CodeMap>();
  readonly #lo: number;

  constructor(readonly opts: CatalogOptions) {
    this.#lo = Math.min(1, Math.max(MIN_INTERVAL_SHARE, MIN_INTERVAL_MS / opts.driftMs));
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

  /** The product's pace (see MIN_INTERVAL_SHARE): whole milliseconds, the slot at least 1 ms. */
  schedule(country: Country, asin: string): Schedule {
    const { seed, driftMs } = this.opts;
    const u = unit(seed, country, asin, 'pace');
    const intervalMs = Math.max(MIN_INTERVAL_MS, Math.round(driftMs * Math.max(this.#lo, 3 * u * u)));
    const slotMs = Math.max(1, Math.round(intervalMs / SLOTS_PER_CHANGE));
    return { intervalMs, slotMs, phaseMs: Math.floor(unit(seed, country, asin, 'phase') * slotMs) };
  }

  /** Whether slot `k` of the product starts a change. */
  #changesAt(country: Country, asin: string, k: number): boolean {
    return unit(this.opts.seed, country, asin, 'change', k) < 1 / SLOTS_PER_CHANGE;
  }

  /** The product's epoch at `now` (the slot its last change started in): its offer is the same throughout. */
  epochAt(country: Country, asin: string, now: number): number {
    const { slotMs, phaseMs } = this.schedule(country, asin);
    const slot = Math.floor((now + phaseMs) / slotMs);
    for (let k = slot; k > slot - MAX_SLOTS_BACK; k--) if (this.#changesAt(country, asin, k)) return k;
    return slot - MAX_SLOTS_BACK;
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
    const { intervalMs, slotMs, phaseMs } = this.schedule(country, asin);
    const words = this.#words(country);
    // Price and availability come from the listings alone: the rest of the item is left out.
    const seen = (epoch: number): { price: Price | null; availability: Availability } => {
      const [read] = readItems([{ asin, offersV2: { listings: this.#listings(country, asin, epoch, words) } }], []);
      const { price, availability } = normalizeItem(read!);
      return { price, availability };
    };
    const changes: TruthChange[] = [];
    let truncated = false;
    // The first slot that starts at or after `since`, compared with the epoch before it.
    let k = Math.ceil((since + phaseMs) / slotMs);
    let prev = seen(this.epochAt(country, asin, k * slotMs - phaseMs - 1));
    // Nearly every change of epoch is a change; the bound only keeps a wide range from running on.
    const lastSlot = k + 20 * SLOTS_PER_CHANGE * limit;
    for (; k * slotMs - phaseMs <= until; k++) {
      if (k === lastSlot) {
        truncated = true;
        break;
      }
      if (!this.#changesAt(country, asin, k)) continue;
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
        changes.push({ at: k * slotMs - phaseMs, ...cur });
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
    const jp = country === 'JP';
    // Prices span 100× from ¥300 or from 2 units of a currency with cents; yen prices end in 0.
    const digits = currencyDigits(currency);
    const base = Math.exp(Math.log(digits ? 2 : 300) + s('price') * Math.log(100));
    const factor = 0.85 + 0.3 * s('price', epoch);
    const count = between(1, 3, seed, country, asin, 'listings', epoch);
    const winner = s('buybox', epoch) < 0.85 ? between(0, count - 1, seed, country, asin, 'winner', epoch) : -1;
    const unpriced = s('unpriced') < UNPRICED_SHARE ? between(0, count - 1, seed, country, asin, 'unpriced', epoch) : -1;
    const listings = Array.from({ length: count }, (_, k) => {
      const raw = base * factor * (1 + 0.08 * k * s('spread', k, epoch));
      const amount = digits ? Math.round(raw * 10 ** digits) / 10 ** digits : Math.round(raw / 10) * 10;
      const displayAmount = formatMoney(country, amount);
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
            ? { id: `A${country}AMAZON00`, name: `Amazon${MARKETPLACES[country].host.replace(/^www\.amazon/, '')}` }
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
