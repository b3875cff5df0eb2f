/**
 * The synthetic catalogue: a pure function of (seed, marketplace, identifier, time epoch). Nothing
 * is stored per ASIN, so every well-formed ASIN and EAN-13 is answered. Titles, brands and codes are
 * fixed for a seed; prices, availability and ranks change every `driftMs` so refreshes see change.
 */
import type { Country } from '../catalog/identifiers.js';
import { MARKETPLACES } from '../upstream/marketplaces.js';
import { CodeMap, eanCheckDigit } from './codes.js';
import { between, pick, unit } from './hash.js';
import { EN, JA, type Vocabulary } from './vocabulary.js';

export interface CatalogOptions {
  readonly seed: string;
  readonly notFoundRate: number;
  readonly notAccessibleRate: number;
  readonly driftMs: number;
}

export type Lookup = { readonly kind: 'found'; readonly item: Record<string, unknown> } | { readonly kind: 'not_found' | 'not_accessible' };

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
 * in each drift epoch one of their listings, drawn anew, comes without them.
 */
const UNPRICED_SHARE = 0.03;

export class SyntheticCatalog {
  readonly #maps = new Map<Country, CodeMap>();

  constructor(readonly opts: CatalogOptions) {}

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
    // Items that an EAN lists always exist: a code search never leads to a dead ASIN.
    if (ean === undefined) {
      const u = unit(this.opts.seed, country, 'exists', asin);
      if (u < this.opts.notFoundRate) return { kind: 'not_found' };
      if (u < this.opts.notFoundRate + this.opts.notAccessibleRate) return { kind: 'not_accessible' };
    }
    return { kind: 'found', item: this.#item(country, asin, ean, now, partnerTag) };
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

  #item(country: Country, asin: string, ean: string | undefined, now: number, partnerTag: string): Record<string, unknown> {
    const { seed, driftMs } = this.opts;
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
    const epoch = Math.floor(now / driftMs);
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
      const displayAmount = new Intl.NumberFormat(jp ? 'ja-JP' : 'en-US', { style: 'currency', currency }).format(amount);
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
    return listings.sort((a, b) => unit(seed, asin, epoch, a.merchantInfo.id) - unit(seed, asin, epoch, b.merchantInfo.id));
  }
}
