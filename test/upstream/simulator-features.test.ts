/**
 * The simulator's rate features: a product's change rate follows its sales rank, category and
 * offers as far as the setting says, while the distribution of rates over products stays the same,
 * and without the setting nothing moves.
 */
import { describe, expect, it } from 'vitest';
import { COUNTRY, PARTNER_TAG, toUpstream } from '../../bench/lib/truth.js';
import { SyntheticCatalog } from '../../src/simulator/catalog.js';
import { paceDraw, type FeatureStrength } from '../../src/simulator/rate-features.js';

const HOUR = 3_600_000;
const T0 = Date.parse('2026-01-05T00:00:00Z');
const N = 3_000;
const asinAt = (i: number): string => `B0${i.toString(36).toUpperCase().padStart(8, '0')}`;
const catalog = (features?: FeatureStrength): SyntheticCatalog =>
  new SyntheticCatalog({ seed: 'features', notFoundRate: 0, notAccessibleRate: 0, driftMs: HOUR, ...(features ? { features } : {}) });

/** Spearman's rank correlation. */
function spearman(xs: readonly number[], ys: readonly number[]): number {
  const ranks = (v: readonly number[]) => {
    const order = v.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
    const r = new Array<number>(v.length);
    order.forEach(([, i], k) => (r[i] = k));
    return r;
  };
  const a = ranks(xs);
  const b = ranks(ys);
  const n = xs.length;
  const d2 = a.reduce((s, x, i) => s + (x - b[i]!) ** 2, 0);
  return 1 - (6 * d2) / (n * (n * n - 1));
}

/** Each product's mean interval and its sales rank as the simulator reports it. */
function sample(c: SyntheticCatalog): { interval: number[]; rank: number[] } {
  const interval: number[] = [];
  const rank: number[] = [];
  for (let i = 0; i < N; i++) {
    const asin = asinAt(i);
    const found = c.lookup(COUNTRY, asin, T0, PARTNER_TAG);
    if (found.kind !== 'found') throw new Error(`${asin} is not found`);
    interval.push(c.schedule(COUNTRY, asin).intervalMs);
    rank.push(toUpstream(found.item).salesRank!);
  }
  return { interval, rank };
}

const quantile = (v: readonly number[], q: number): number => [...v].sort((a, b) => a - b)[Math.floor(q * (v.length - 1))]!;

describe('the simulator’s rate features', () => {
  it('leave every product as it was at none, the default', () => {
    const plain = catalog();
    const none = catalog('none');
    for (let i = 0; i < 200; i++) expect(none.schedule(COUNTRY, asinAt(i))).toEqual(plain.schedule(COUNTRY, asinAt(i)));
    expect(paceDraw('none', 0.123, () => ({ rank: 0.9, category: 0.1, offers: 0.5 }))).toBe(0.123);
  });

  it('make best sellers change faster, more so when strong, with the rates over products unchanged', () => {
    const none = sample(catalog('none'));
    const weak = sample(catalog('weak'));
    const strong = sample(catalog('strong'));
    const rho = (s: { interval: number[]; rank: number[] }) => spearman(s.rank, s.interval);
    expect(Math.abs(rho(none))).toBeLessThan(0.06);
    expect(rho(weak)).toBeGreaterThan(0.2);
    expect(rho(strong)).toBeGreaterThan(rho(weak) + 0.15);
    // The copula keeps the pace draw uniform: the intervals' quantiles agree within sampling noise.
    for (const q of [0.1, 0.5, 0.9]) {
      const base = quantile(none.interval, q);
      expect(quantile(strong.interval, q) / base).toBeGreaterThan(0.85);
      expect(quantile(strong.interval, q) / base).toBeLessThan(1.15);
    }
  });

  it('tilt the offers a product lists towards its fast ones', () => {
    const c = catalog('strong');
    const offers = (asin: string): number => {
      const found = c.lookup(COUNTRY, asin, T0, PARTNER_TAG);
      if (found.kind !== 'found') throw new Error(`${asin} is not found`);
      return ((found.item.offersV2 as { listings: unknown[] } | undefined)?.listings ?? []).length;
    };
    const xs = Array.from({ length: N }, (_, i) => asinAt(i));
    const interval = new Map(xs.map((a) => [a, c.schedule(COUNTRY, a).intervalMs]));
    const [q1, q3] = [quantile([...interval.values()], 0.25), quantile([...interval.values()], 0.75)];
    const fast = xs.filter((a) => interval.get(a)! < q1);
    const slow = xs.filter((a) => interval.get(a)! > q3);
    const mean = (v: string[]) => v.reduce((s, a) => s + offers(a), 0) / v.length;
    expect(mean(fast)).toBeGreaterThan(mean(slow) + 0.1);
  });
});
