import { describe, expect, it } from 'vitest';
import { hoursToPrice } from '../../src/scheduling/refresh-objective.js';
import { bucketOf, rateOfBucket, tunePolicy, type RateCount } from '../../src/scheduling/tune-policy.js';

const HOUR = 3_600_000;
/** A catalogue like the simulator's: mean interval m·3u², u even in (0, 1). */
function catalogue(meanHours: number, n = 400): RateCount[] {
  const byBucket = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const u = (i + 0.5) / n;
    const b = bucketOf(1 / (meanHours * Math.max(1e-3, 3 * u * u)));
    byBucket.set(b, (byBucket.get(b) ?? 0) + 1);
  }
  return [...byBucket].map(([b, count]) => ({ rate: rateOfBucket(b), count }));
}
const base = { minMs: 5 * 60_000, maxMs: 24 * HOUR };

describe('tunePolicy', () => {
  it('spends exactly the budget: the refreshes its intervals ask for are the budget', () => {
    for (const weight of [0, 0.5, 1]) {
      const t = tunePolicy({ ...base, rates: catalogue(24), budgetPerHour: 100, weight })!;
      expect(t.predicted.refreshesPerHour / 100).toBeCloseTo(1, 3);
      expect(t.even.refreshesPerHour / 100).toBeCloseTo(1, 6);
      expect(t.evenHours).toBeCloseTo(4, 9);
    }
  });

  it('each objective beats the even share on its own measure, and freshness never refreshes the fastest more often', () => {
    const rates = catalogue(24);
    const changes = tunePolicy({ ...base, rates, budgetPerHour: 100, weight: 0 })!;
    const freshness = tunePolicy({ ...base, rates, budgetPerHour: 100, weight: 1 })!;
    expect(changes.predicted.changesPerHour).toBeGreaterThan(1.5 * changes.even.changesPerHour);
    expect(freshness.predicted.freshness).toBeGreaterThan(freshness.even.freshness);
    const fastest = Math.max(...rates.map((r) => r.rate));
    expect(hoursToPrice(freshness, fastest)).toBeGreaterThan(hoursToPrice(changes, fastest));
  });

  it('spends the budget on a catalogue that changes far faster than the budget can look', () => {
    // Every product changes 10–60 times an hour, 500 of them with 100 refreshes an hour and 6 h at
    // most: the changes objective's price lies where gain is 1 in floating point.
    const rates: RateCount[] = [10, 20, 40, 60].map((rate) => ({ rate, count: 125 }));
    const t = tunePolicy({ minMs: 5 * 60_000, maxMs: 6 * HOUR, rates, budgetPerHour: 100, weight: 0 })!;
    expect(t.price).toBeLessThan(1);
    expect(t.predicted.refreshesPerHour).toBeGreaterThanOrEqual(100);
  });

  it('auto: as many changes as keep half of the freshness gain', () => {
    const rates = catalogue(24);
    const auto = tunePolicy({ ...base, rates, budgetPerHour: 100, weight: null })!;
    const best = tunePolicy({ ...base, rates, budgetPerHour: 100, weight: 1 })!;
    expect(auto.weight).toBeGreaterThan(0);
    expect(auto.weight).toBeLessThanOrEqual(1);
    expect(auto.predicted.freshness).toBeGreaterThanOrEqual((auto.even.freshness + best.predicted.freshness) / 2 - 1e-9);
    expect(auto.predicted.changesPerHour).toBeGreaterThan(best.predicted.changesPerHour);
    // A lower weight would have lost more freshness than allowed.
    const less = tunePolicy({ ...base, rates, budgetPerHour: 100, weight: Math.max(0, auto.weight - 0.05) })!;
    if (auto.weight > 0) expect(less.predicted.freshness).toBeLessThan((auto.even.freshness + best.predicted.freshness) / 2);
  });

  it("bounds every interval by the priority's, and says nothing without estimates or budget", () => {
    const t = tunePolicy({ ...base, rates: [{ rate: 1e-6, count: 10 }], budgetPerHour: 0.01, weight: 0 })!;
    expect(Math.min(24, hoursToPrice(t, 1e-6))).toBe(24);
    expect(tunePolicy({ ...base, rates: [], budgetPerHour: 100, weight: 0 })).toBeNull();
    expect(tunePolicy({ ...base, rates: catalogue(24), budgetPerHour: 0, weight: 0 })).toBeNull();
  });

  it('buckets rates within 9 %', () => {
    for (const r of [1e-4, 0.013, 1, 7.7, 300]) expect(Math.abs(rateOfBucket(bucketOf(r)) / r - 1)).toBeLessThan(0.091);
  });
});
