import { describe, expect, it } from 'vitest';
import { gain, refreshIndex, type ObjectiveSettings } from '../../src/scheduling/refresh-objective.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const changes: ObjectiveSettings = { objective: 'changes', balance: 0.5 };
const freshness: ObjectiveSettings = { objective: 'freshness', balance: 0.5 };
const balanced: ObjectiveSettings = { objective: 'balanced', balance: 0.5 };
/** Index of a product changing every `everyH` hours, last seen `sinceH` ago, priority interval 24 h. */
const index = (s: ObjectiveSettings, everyH: number, sinceH: number) => refreshIndex(s, 1 / everyH, sinceH * HOUR, DAY);

describe('gain(x) = 1 − e^−x(1 + x)', () => {
  it('is the chance of two or more Poisson events, accurate near 0', () => {
    expect(gain(1)).toBeCloseTo(1 - 2 / Math.E, 12);
    expect(gain(1e-6) / 5e-13).toBeCloseTo(1, 5);
    expect(gain(1e-3) / (-Math.expm1(-1e-3) - 1e-3 * Math.exp(-1e-3))).toBeCloseTo(1, 9);
    expect(gain(0)).toBe(0);
    expect(gain(50)).toBeCloseTo(1, 12);
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
    // Its index is bounded by ρ/λ however long it waited.
    expect(index(freshness, 0.1, 1_000)).toBeLessThanOrEqual(0.1 / 24 + 1e-12);
    expect(index(changes, 0.1, 24)).toBeGreaterThan(index(changes, 24, 36));
  });

  it('balanced: between the two, each product weighed by both', () => {
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
    expect(refreshIndex({ objective: 'balanced', balance: 0 }, 0.5, HOUR, DAY)).toBe(refreshIndex(changes, 0.5, HOUR, DAY));
    expect(refreshIndex({ objective: 'balanced', balance: 1 }, 0.5, HOUR, DAY)).toBe(refreshIndex(freshness, 0.5, HOUR, DAY));
  });

  it('starves nothing: a product that never changes grows in worth with its wait, without bound in time', () => {
    for (const s of [changes, freshness, balanced]) {
      const still = (sinceH: number) => refreshIndex(s, 1e-6, sinceH * HOUR, DAY);
      expect(still(48)).toBeGreaterThan(still(24));
      expect(still(24)).toBeGreaterThan(still(1));
      expect(still(1)).toBeGreaterThan(0);
    }
    // Never seen, or no estimate yet: first.
    expect(refreshIndex(balanced, null, null, DAY)).toBe(Infinity);
    expect(refreshIndex(balanced, 1, null, DAY)).toBe(Infinity);
  });
});
