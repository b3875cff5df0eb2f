import { describe, expect, it } from 'vitest';
import { gain, gainInverse, hoursToPrice, refreshIndex, weightOf, type RefreshPolicy } from '../../src/scheduling/refresh-objective.js';

const HOUR = 3_600_000;
/** The even share: every product every 6 h. */
const EVEN = 6;
const changes = { weight: 0, evenHours: EVEN };
const freshness = { weight: 1, evenHours: EVEN };
const balanced = { weight: 0.5, evenHours: EVEN };
type Weighing = typeof changes;
/** Index of a product changing every `everyH` hours, last seen `sinceH` ago. */
const index = (s: Weighing, everyH: number, sinceH: number) => refreshIndex(s, 1 / everyH, sinceH * HOUR);

describe('gain(x) = 1 − e^−x(1 + x)', () => {
  it('is the chance of two or more Poisson events, accurate near 0', () => {
    expect(gain(1)).toBeCloseTo(1 - 2 / Math.E, 12);
    expect(gain(1e-6) / 5e-13).toBeCloseTo(1, 5);
    expect(gain(1e-3) / (-Math.expm1(-1e-3) - 1e-3 * Math.exp(-1e-3))).toBeCloseTo(1, 9);
    expect(gain(0)).toBe(0);
    expect(gain(50)).toBeCloseTo(1, 12);
  });

  it('gainInverse undoes it, and says Infinity where gain never reaches', () => {
    for (const x of [1e-3, 0.1, 1, 3, 12]) expect(gainInverse(gain(x)) / x).toBeCloseTo(1, 9);
    expect(gainInverse(0)).toBe(0);
    expect(gainInverse(1)).toBe(Infinity);
  });
});

describe('refreshIndex', () => {
  it('changes: the product with more expected changes since its last look first, whatever its rate', () => {
    // Two expected changes beat one, whether they came from a fast product briefly or a slow one long.
    expect(index(changes, 1, 2)).toBeGreaterThan(index(changes, 1, 1));
    expect(index(changes, 12, 24)).toBeCloseTo(index(changes, 1, 2), 12);
    expect(index(changes, 0.1, 10)).toBeGreaterThan(index(changes, 24, 24));
  });

  it('freshness: gives up on the fastest changers and takes the overdue slow ones first', () => {
    // A product changing every 6 minutes is stale again at once: a refresh of it buys little time.
    expect(index(freshness, 24, 36)).toBeGreaterThan(index(freshness, 0.1, 24));
    // Its index is bounded by 1/(λ τ_u) however long it waited.
    expect(index(freshness, 0.1, 1_000)).toBeLessThanOrEqual(0.1 / EVEN + 1e-12);
    expect(index(changes, 0.1, 24)).toBeGreaterThan(index(changes, 24, 36));
  });

  it('balanced: between the two, each product weighed by both; the weights of the objectives', () => {
    for (const [everyH, sinceH] of [
      [0.1, 5],
      [6, 10],
      [48, 72],
    ] as const) {
      const b = index(balanced, everyH, sinceH);
      const lo = Math.min(index(changes, everyH, sinceH), index(freshness, everyH, sinceH));
      const hi = Math.max(index(changes, everyH, sinceH), index(freshness, everyH, sinceH));
      expect(b).toBeGreaterThanOrEqual(lo - 1e-12);
      expect(b).toBeLessThanOrEqual(hi + 1e-12);
    }
    // A product changing once in the even interval is worth the same to both.
    expect(index(freshness, EVEN, 3)).toBeCloseTo(index(changes, EVEN, 3), 12);
    expect(weightOf('changes', 0.3)).toBe(0);
    expect(weightOf('freshness', 0.3)).toBe(1);
    expect(weightOf('balanced', 0.3)).toBe(0.3);
    expect(weightOf('balanced', null)).toBeNull();
  });

  it('starves nothing: a product that never changes grows in worth with its wait, without bound in time', () => {
    for (const s of [changes, freshness, balanced]) {
      const still = (sinceH: number) => refreshIndex(s, 1e-6, sinceH * HOUR);
      expect(still(48)).toBeGreaterThan(still(24));
      expect(still(24)).toBeGreaterThan(still(1));
      expect(still(1)).toBeGreaterThan(0);
    }
    // Never seen, or no estimate yet: first.
    expect(refreshIndex(balanced, null, null)).toBe(Infinity);
    expect(refreshIndex(balanced, 1, null)).toBe(Infinity);
  });
});

describe('hoursToPrice', () => {
  it('is when the index reaches the price', () => {
    const policy: RefreshPolicy = { price: 0.2, weight: 0.5, evenHours: EVEN };
    for (const everyH of [0.5, 3, 20]) {
      const h = hoursToPrice(policy, 1 / everyH);
      expect(refreshIndex(policy, 1 / everyH, h * HOUR)).toBeCloseTo(0.2, 9);
    }
    // changes: the same expected changes (λτ) for every product.
    const c: RefreshPolicy = { price: 0.2, weight: 0, evenHours: EVEN };
    expect(hoursToPrice(c, 2) * 2).toBeCloseTo(hoursToPrice(c, 0.1) * 0.1, 9);
    // freshness: a product too fast to keep current never reaches the price.
    expect(hoursToPrice({ price: 0.2, weight: 1, evenHours: EVEN }, 10)).toBe(Infinity);
  });
});
