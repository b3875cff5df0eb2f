/**
 * The synthetic catalogue: a pure function of (seed, marketplace, identifier, time epoch). Nothing
 * is stored per ASIN, so every well-formed ASIN and EAN-13 is answered. Titles, brands and codes are
 * fixed for a seed; prices, availability, Buy Box and ranks change once per epoch of the product's
 * own length (see `schedule`), so refreshes see change, some products often and most rarely.
 */
import type { Country } from '../core/identifiers.js';
import type { Availability, Price } from '../core/product.js';
import { normalizeItem } from '../upstream/creators/normalize.js';
import { readItems } from '../upstream/creators/read.js';
import { currencyDigits, MARKETPLACES } from '../upstream/marketplaces.js';
import { CodeMap, eanCheckDigit } from './codes.js';
import { between, pick, unit } from './hash.js';
import { categoryScores, offerCount, paceDraw, type FeatureStrength } from './rate-features.js';
import { EN, JA, type Vocabulary } from './vocabulary.js';

export interface CatalogOptions {
  readonly seed: string;
  readonly notFoundRate: number;
  readonly notAccessibleRate: number;
  /** The mean over products of the interval between a product's changes (see MIN_INTERVAL_SHARE). */
  readonly driftMs: number;
  /** Share of products that never change, in [0, 1] (see MIN_INTERVAL_SHARE); none when absent. */
  readonly stillShare?: number;
  /** How much a product's change activity swings over the day, in [0, 1) (see Swing); 0 when absent. */
  readonly dailySwing?: number;
  /** How much it swings over a product's period of 1 to 4 weeks, in [0, 1 - dailySwing); 0 when absent. */
  readonly weeklySwing?: number;
  /**
   * The shortest mean interval of a product (default 1 s): a benchmark whose truth must list every
   * change raises it, since the fastest products hold most of the changes.
   */
  readonly fastestMs?: number;
  /**
   * How far a product's rate follows its sales rank, category and offers (rate-features.ts):
   * none (the default), weak or strong.
   */
  readonly features?: FeatureStrength;
}

export type Lookup = { readonly kind: 'found'; readonly item: Record<string, unknown> } | { readonly kind: 'not_found' | 'not_accessible' };

/**
 * When a product's offer changes: time is cut into slots of `slotMs`, shifted by `phaseMs`, and
 * each slot starts a change with probability 1 / SLOTS_PER_CHANGE, so changes come on average
 * every `intervalMs`, at irregular gaps (geometric in slots: nearly memoryless, like real repricing).
 * When the activity swings (see Swing) the slots are those of the product's warped clock, so a
 * change no longer starts at a multiple of `slotMs` of real time. A product that never changes has
 * all three at NEVER_MS, NEVER_MS and 0.
 */
export interface Schedule {
  readonly intervalMs: number;
  readonly slotMs: number;
  readonly phaseMs: number;
}

/**
 * The interval of a product that never changes. Finite rather than Infinity so that it survives
 * JSON (`mean_interval_ms` of /__truth), sorts by subtraction (Infinity - Infinity is NaN), falls
 * in a benchmark's last bucket (`< Infinity`), and still makes a rate of 0 to any rounding.
 */
export const NEVER_MS = Number.MAX_VALUE;

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
 *
 * Two optional departures, both off by default, give a scheduler what real catalogues give it:
 * - `stillShare`: that share of products (drawn from the seed) never changes at all, so refreshing
 *   them is pure waste that a good estimator learns to stop. Their epoch is STILL_EPOCH whatever
 *   the time, and their interval NEVER_MS.
 * - `dailySwing` and `weeklySwing`: a product's rate is m_p⁻¹ times an activity that swings over the
 *   day and over a slower period (see Swing), so an estimator that assumes a constant rate sees
 *   busy hours and quiet weeks. The activity averages 1, so m_p stays the product's mean interval
 *   and `driftMs` the mean over products.
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
/** The one epoch of a product that never changes (see `stillShare`). */
const STILL_EPOCH = 0;

const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;
const TAU = 2 * Math.PI;

/**
 * How a product's change activity swings: activity(t) = 1 + daily·cos(2πt/DAY + dayPhase) +
 * weekly·cos(2πt/periodMs + weekPhase), the phases uniform and the period uniform in [1, 4] weeks,
 * all drawn from the seed per product. Rather than thin a faster process, the product's slots are
 * cut on a warped clock W(t) = ∫₀ᵗ activity, in closed form:
 *   W(t) = t + daily·DAY/2π·(sin(2πt/DAY + dayPhase) − sin dayPhase)
 *            + weekly·periodMs/2π·(sin(2πt/periodMs + weekPhase) − sin weekPhase).
 * W is strictly increasing (activity ≥ 1 − daily − weekly > 0), so an epoch is one evaluation of W
 * and a change's real instant is W's inverse at a slot start, which only `truth` needs. Over whole
 * periods W advances as fast as t, so m_p stays the mean interval. W(t) − t is bounded by
 * `reach`, which brackets the inverse. Two limits of floating point: W is only monotone from one
 * millisecond to the next while 1 − daily − weekly stays well above its rounding (2.4e-4 of a
 * millisecond near today's epoch), and Math.sin is exact to the bit only within one JavaScript
 * engine, so another engine may move a change by a millisecond (both `lookup` and `truth` with it).
 */
interface Swing {
  readonly daily: number;
  readonly weekly: number;
  readonly dayPhase: number;
  readonly weekPhase: number;
  readonly periodMs: number;
  /** Amplitudes of the two sine terms of W (ms). */
  readonly dayAmpMs: number;
  readonly weekAmpMs: number;
  /** A bound on |W(t) − t| (ms). */
  readonly reach: number;
}

/** The angle of `t` in a cycle of `period` ms; the remainder first keeps it exact for large t. */
const angle = (t: number, period: number): number => TAU * ((t % period) / period);

/** The product's warped time at `t` (see Swing). */
function warped(w: Swing, t: number): number {
  return (
    t +
    w.dayAmpMs * (Math.sin(angle(t, DAY_MS) + w.dayPhase) - Math.sin(w.dayPhase)) +
    w.weekAmpMs * (Math.sin(angle(t, w.periodMs) + w.weekPhase) - Math.sin(w.weekPhase))
  );
}

/** dW/dt at `t`: the product's activity relative to its mean. */
function activityOf(w: Swing, t: number): number {
  return 1 + w.daily * Math.cos(angle(t, DAY_MS) + w.dayPhase) + w.weekly * Math.cos(angle(t, w.periodMs) + w.weekPhase);
}

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
  readonly #categoryScores = new Map<Country, Map<string, number>>();
  readonly #lo: number;

  readonly #stillShare: number;
  readonly #daily: number;
  readonly #weekly: number;

  constructor(readonly opts: CatalogOptions) {
    this.#lo = Math.min(1, Math.max(MIN_INTERVAL_SHARE, Math.max(MIN_INTERVAL_MS, opts.fastestMs ?? 0) / opts.driftMs));
    const { stillShare = 0, dailySwing = 0, weeklySwing = 0 } = opts;
    if (!(stillShare >= 0 && stillShare <= 1)) throw new RangeError(`stillShare must be in [0, 1], not ${stillShare}`);
    if (!(dailySwing >= 0 && weeklySwing >= 0 && dailySwing + weeklySwing < 1)) {
      throw new RangeError(`dailySwing and weeklySwing must be at least 0 and sum to less than 1, not ${dailySwing} and ${weeklySwing}`);
    }
    this.#stillShare = stillShare;
    this.#daily = dailySwing;
    this.#weekly = weeklySwing;
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
    if (this.#still(country, asin)) return { intervalMs: NEVER_MS, slotMs: NEVER_MS, phaseMs: 0 };
    const u = paceDraw(this.opts.features ?? 'none', unit(seed, country, asin, 'pace'), () => ({
      rank: unit(seed, country, asin, 'rank'),
      category: this.#categoryScore(country, pick(this.#words(country).categories, seed, country, asin, 'category')),
      offers: unit(seed, country, asin, 'offers-level'),
    }));
    const intervalMs = Math.max(MIN_INTERVAL_MS, Math.round(driftMs * Math.max(this.#lo, 3 * u * u)));
    const slotMs = Math.max(1, Math.round(intervalMs / SLOTS_PER_CHANGE));
    return { intervalMs, slotMs, phaseMs: Math.floor(unit(seed, country, asin, 'phase') * slotMs) };
  }

  /** The category's normal score for the rate features (rate-features.ts), kept per marketplace. */
  #categoryScore(country: Country, category: string): number {
    let scores = this.#categoryScores.get(country);
    if (!scores) {
      scores = categoryScores(this.#words(country).categories, (c) => unit(this.opts.seed, country, 'category-pace', c));
      this.#categoryScores.set(country, scores);
    }
    return scores.get(category) ?? 0;
  }

  /** Whether the product never changes (see `stillShare`). */
  #still(country: Country, asin: string): boolean {
    return this.#stillShare > 0 && unit(this.opts.seed, country, asin, 'still') < this.#stillShare;
  }

  /** How the product's activity swings, or undefined when it is constant (see Swing). */
  #swing(country: Country, asin: string): Swing | undefined {
    const daily = this.#daily;
    const weekly = this.#weekly;
    if (daily === 0 && weekly === 0) return undefined;
    const { seed } = this.opts;
    const periodMs = Math.round(WEEK_MS * (1 + 3 * unit(seed, country, asin, 'swing-period')));
    const dayAmpMs = (daily * DAY_MS) / TAU;
    const weekAmpMs = (weekly * periodMs) / TAU;
    return {
      daily,
      weekly,
      dayPhase: TAU * unit(seed, country, asin, 'swing-day-phase'),
      weekPhase: TAU * unit(seed, country, asin, 'swing-week-phase'),
      periodMs,
      dayAmpMs,
      weekAmpMs,
      reach: 2 * (dayAmpMs + weekAmpMs),
    };
  }

  /**
   * The product's change activity at `t` relative to its mean (see Swing): its rate of change is
   * this over `schedule(...).intervalMs`. 1 when nothing swings, 0 for a product that never changes.
   */
  activity(country: Country, asin: string, t: number): number {
    if (this.#still(country, asin)) return 0;
    const swing = this.#swing(country, asin);
    return swing ? activityOf(swing, t) : 1;
  }

  /** The slot the product is in at `now`: of real time, or of its warped clock when it swings. */
  #slotOf(sched: Schedule, swing: Swing | undefined, now: number): number {
    return Math.floor(((swing ? warped(swing, now) : now) + sched.phaseMs) / sched.slotMs);
  }

  /**
   * The first whole millisecond in slot `k` or later: the real instant a change in slot k starts.
   * A safeguarded Newton iteration on W(t) = k·slotMs − phaseMs (W' = activity ≥ 1 − daily −
   * weekly, and |W(t) − t| ≤ reach brackets the root) comes within a millisecond; the last steps
   * test the very expression `epochAt` reads, so `lookup` and `truth` agree to the millisecond.
   */
  #slotStart(sched: Schedule, swing: Swing, k: number): number {
    const target = k * sched.slotMs - sched.phaseMs;
    let lo = target - swing.reach - 1; // W(lo) < target
    let hi = target + swing.reach + 1; // W(hi) > target
    let x = target;
    for (let i = 0; i < 100 && hi - lo > 1; i++) {
      const f = warped(swing, x) - target;
      if (f < 0) lo = x;
      else hi = x;
      const next = x - f / activityOf(swing, x);
      if (Math.abs(next - x) < 0.25) {
        x = next;
        break;
      }
      x = next >= lo && next <= hi ? next : lo + (hi - lo) / 2;
    }
    let t = Math.ceil(x);
    while (this.#slotOf(sched, swing, t - 1) >= k) t--;
    while (this.#slotOf(sched, swing, t) < k) t++;
    return t;
  }

  /** Whether slot `k` of the product starts a change. */
  #changesAt(country: Country, asin: string, k: number): boolean {
    return unit(this.opts.seed, country, asin, 'change', k) < 1 / SLOTS_PER_CHANGE;
  }

  /** The product's epoch at `now` (the slot its last change started in): its offer is the same throughout. */
  epochAt(country: Country, asin: string, now: number): number {
    if (this.#still(country, asin)) return STILL_EPOCH;
    return this.#lastChange(country, asin, this.#slotOf(this.schedule(country, asin), this.#swing(country, asin), now));
  }

  /** The last slot at or before `slot` that starts a change. */
  #lastChange(country: Country, asin: string, slot: number): number {
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
    if (this.#still(country, asin)) return { kind: 'found', meanIntervalMs: NEVER_MS, changes: [], truncated: false };
    const sched = this.schedule(country, asin);
    const { intervalMs, slotMs, phaseMs } = sched;
    const swing = this.#swing(country, asin);
    const words = this.#words(country);
    // Price and availability come from the listings alone: the rest of the item is left out.
    const seen = (epoch: number): { price: Price | null; availability: Availability } => {
      const [read] = readItems([{ asin, offersV2: { listings: this.#listings(country, asin, epoch, words) } }], []);
      const { price, availability } = normalizeItem(read!);
      return { price, availability };
    };
    const changes: TruthChange[] = [];
    let truncated = false;
    // The first slot that starts at or after `since`, compared with the epoch before it; on a
    // warped clock changes start at whole milliseconds, the first from ⌈since⌉ on, the last by ⌊until⌋.
    let k = swing ? this.#slotOf(sched, swing, Math.ceil(since) - 1) + 1 : Math.ceil((since + phaseMs) / slotMs);
    const lastInRange = swing ? this.#slotOf(sched, swing, Math.floor(until)) : 0;
    const inRange = (slot: number): boolean => (swing ? slot <= lastInRange : slot * slotMs - phaseMs <= until);
    const startOf = (slot: number): number => (swing ? this.#slotStart(sched, swing, slot) : slot * slotMs - phaseMs);
    let prev = seen(this.#lastChange(country, asin, k - 1));
    // Nearly every change of epoch is a change; the bound only keeps a wide range from running on.
    const lastSlot = k + 20 * SLOTS_PER_CHANGE * limit;
    for (; inRange(k); k++) {
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
        changes.push({ at: startOf(k), ...cur });
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
    const count = offerCount(this.opts.features ?? 'none', s('listings', epoch), () => s('offers-level'));
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
