/**
 * A product's recent price levels and how far its current price is below them: the deals feed's
 * figures, computed when a refresh writes the product (src/catalog/writes.ts) from compact per-day
 * aggregates kept on the product, so listing deals reads precomputed, indexed numbers and never
 * the history.
 */

/** The windows (days, ending today) whose levels a product keeps. */
export const DEAL_WINDOWS = [7, 30, 90] as const;
export type DealWindow = (typeof DEAL_WINDOWS)[number];

/** What a current price is compared with: the window's lowest, its average or its highest. */
export const DEAL_BASES = ['low', 'avg', 'high'] as const;
export type DealBasis = (typeof DEAL_BASES)[number];

/** The name of one figure, on the product's `drop` and `price_levels` alike: `avg_30`. */
export type DealField = `${DealBasis}_${DealWindow}`;
export const DEAL_FIELDS: readonly DealField[] = DEAL_BASES.flatMap((b) => DEAL_WINDOWS.map((n) => `${b}_${n}` as const));

export function dealField(basis: DealBasis, days: DealWindow): DealField {
  return `${basis}_${days}`;
}

/** Days kept: the longest window. */
export const KEPT_DAYS = 90;

const DAY_MS = 86_400_000;

/** One UTC day's observed prices (minor units): lowest, highest, their sum and count. */
export interface PriceDay {
  readonly d: number;
  readonly lo: number;
  readonly hi: number;
  readonly sum: number;
  readonly n: number;
}

/** The UTC day an instant falls in, as days since the epoch. */
export function dayNumber(at: Date): number {
  return Math.floor(at.getTime() / DAY_MS);
}

/** The days with `price` observed on `day` added, oldest first, those older than KEPT_DAYS dropped. */
export function withDayPrice(days: readonly PriceDay[], price: number, day: number): PriceDay[] {
  const kept = days.filter((p) => p.d > day - KEPT_DAYS && p.d <= day).sort((a, b) => a.d - b.d);
  const last = kept.at(-1);
  if (last?.d === day) {
    kept[kept.length - 1] = { d: day, lo: Math.min(last.lo, price), hi: Math.max(last.hi, price), sum: last.sum + price, n: last.n + 1 };
  } else {
    kept.push({ d: day, lo: price, hi: price, sum: price, n: 1 });
  }
  return kept;
}

/**
 * A window's levels: lowest, highest and mean of the observations, and the lowest level above
 * `price` (from each day's lowest, or its highest when its lowest is not above): what a price at
 * the window's lowest is below. Null when nothing in the window was above it.
 */
export interface WindowLevels {
  readonly low: number;
  readonly high: number;
  readonly avg: number;
  readonly nextAbove: number | null;
}

/** The levels of the `window` days ending on `day` against `price`; null when none of them saw a price. */
export function levelsOf(days: readonly PriceDay[], day: number, window: DealWindow, price: number): WindowLevels | null {
  const inside = days.filter((p) => p.d > day - window && p.d <= day);
  if (inside.length === 0) return null;
  let low = Infinity;
  let high = -Infinity;
  let sum = 0;
  let n = 0;
  let nextAbove = Infinity;
  for (const p of inside) {
    low = Math.min(low, p.lo);
    high = Math.max(high, p.hi);
    sum += p.sum;
    n += p.n;
    const above = p.lo > price ? p.lo : p.hi > price ? p.hi : Infinity;
    nextAbove = Math.min(nextAbove, above);
  }
  return { low, high, avg: sum / n, nextAbove: Number.isFinite(nextAbove) ? nextAbove : null };
}

/** How far `price` is below `level`, in percent to two decimals; 0 when it is not below. */
export function percentBelow(price: number, level: number): number {
  if (!(level > 0) || price >= level) return 0;
  return Math.round(((level - price) / level) * 10_000) / 100;
}

/** The figures a product stores: each basis's level, and its drop when the price is a deal by it. */
export interface DealFigures {
  readonly levels: Partial<Record<DealField, number>>;
  /** Only the positive ones: a product is in a basis's index only while it is a deal by it. */
  readonly drop: Partial<Record<DealField, number>>;
}

/**
 * The figures of `price` observed on `day` against `days` (which already hold it). By `low`, a
 * price is a deal while it is the window's lowest and something in the window was above it (its
 * drop measured from the lowest such level), so it stays one for as long as it holds at that low;
 * by `avg` and `high`, when it is below the window's average or highest.
 */
export function dealFigures(days: readonly PriceDay[], price: number | null, day: number): DealFigures {
  const levels: Partial<Record<DealField, number>> = {};
  const drop: Partial<Record<DealField, number>> = {};
  if (price === null) return { levels, drop };
  for (const window of DEAL_WINDOWS) {
    const l = levelsOf(days, day, window, price);
    if (!l) continue;
    const avg = Math.round(l.avg);
    levels[dealField('low', window)] = l.nextAbove !== null && price <= l.low ? l.nextAbove : l.low;
    levels[dealField('avg', window)] = avg;
    levels[dealField('high', window)] = l.high;
    const byLow = price <= l.low && l.nextAbove !== null ? percentBelow(price, l.nextAbove) : 0;
    const byAvg = percentBelow(price, l.avg);
    const byHigh = percentBelow(price, l.high);
    if (byLow > 0) drop[dealField('low', window)] = byLow;
    if (byAvg > 0) drop[dealField('avg', window)] = byAvg;
    if (byHigh > 0) drop[dealField('high', window)] = byHigh;
  }
  return { levels, drop };
}

/**
 * The days of a product's history points (oldest first, each holding its price until the next):
 * every day a price was on offer counts it once, from the oldest kept day to `today`. For products
 * written before the per-day aggregates existed.
 */
export function daysOfPoints(points: readonly { readonly at: Date; readonly price: number | null }[], today: number): PriceDay[] {
  const byDay = new Map<number, PriceDay>();
  const first = today - KEPT_DAYS + 1;
  points.forEach((p, i) => {
    if (p.price === null) return;
    const next = points[i + 1];
    const to = next ? Math.min(dayNumber(next.at), today) : today;
    for (let d = Math.max(dayNumber(p.at), first); d <= to; d++) {
      const was = byDay.get(d);
      byDay.set(
        d,
        was
          ? { d, lo: Math.min(was.lo, p.price), hi: Math.max(was.hi, p.price), sum: was.sum + p.price, n: was.n + 1 }
          : { d, lo: p.price, hi: p.price, sum: p.price, n: 1 },
      );
    }
  });
  return [...byDay.values()].sort((a, b) => a.d - b.d);
}
