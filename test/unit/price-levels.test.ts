import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  DEAL_FIELDS,
  KEPT_DAYS,
  dayNumber,
  daysOfPoints,
  dealFigures,
  levelsOf,
  percentBelow,
  withDayPrice,
  type PriceDay,
} from '../../src/core/price-levels.js';

const today = dayNumber(new Date('2026-11-28T10:00:00Z'));

/** Days built from observations `[daysAgo, price]`. */
function daysOf(obs: readonly (readonly [number, number])[]): PriceDay[] {
  return obs.reduce<PriceDay[]>((days, [ago, price]) => withDayPrice(days, price, today - ago), []);
}

describe('per-day aggregates', () => {
  it('folds a day’s observations into one entry, oldest day first', () => {
    const days = daysOf([
      [2, 1000],
      [0, 900],
      [0, 1100],
    ]);
    expect(days).toEqual([
      { d: today - 2, lo: 1000, hi: 1000, sum: 1000, n: 1 },
      { d: today, lo: 900, hi: 1100, sum: 2000, n: 2 },
    ]);
  });

  it(`keeps ${KEPT_DAYS} days at most`, () => {
    const days = daysOf(Array.from({ length: 120 }, (_, i) => [119 - i, 1000 + i] as const));
    expect(days).toHaveLength(KEPT_DAYS);
    expect(days[0]!.d).toBe(today - KEPT_DAYS + 1);
  });
});

describe('levels and drops', () => {
  it('measures each window on its own days', () => {
    const days = daysOf([
      [40, 2000],
      [10, 1500],
      [3, 1200],
      [0, 1000],
    ]);
    expect(levelsOf(days, today, 7, 1000)).toEqual({ low: 1000, high: 1200, avg: 1100, nextAbove: 1200 });
    expect(levelsOf(days, today, 30, 1000)).toMatchObject({ low: 1000, high: 1500, nextAbove: 1200 });
    expect(levelsOf(days, today, 90, 1000)).toMatchObject({ high: 2000, avg: 1425 });
    expect(levelsOf(days, today, 7, 1200)).toMatchObject({ nextAbove: null });
  });

  it('a new low is a deal by every basis; a price above them is none', () => {
    const days = daysOf([
      [5, 1000],
      [2, 1000],
      [0, 800],
    ]);
    const f = dealFigures(days, 800, today);
    expect(f.drop).toMatchObject({ low_7: 20, high_7: 20 });
    expect(f.drop.avg_7).toBeCloseTo(14.29, 2);
    expect(f.levels).toMatchObject({ low_7: 1000, high_7: 1000, avg_7: 933 });
    const up = dealFigures(
      daysOf([
        [3, 1000],
        [0, 1200],
      ]),
      1200,
      today,
    );
    expect(up.drop).toEqual({});
  });

  it('a price back up within a day is no longer the lowest', () => {
    const days = daysOf([
      [3, 1000],
      [0, 800],
      [0, 900],
    ]);
    expect(dealFigures(days, 900, today).drop.low_7).toBeUndefined();
    expect(dealFigures(days, 900, today).drop.high_7).toBe(10);
  });

  it('a new low stays a deal while it holds, until the window holds nothing above it', () => {
    const days = daysOf([
      [5, 1000],
      [1, 800],
      [0, 800],
    ]);
    expect(dealFigures(days, 800, today).drop.low_7).toBe(20);
    expect(dealFigures(days, 800, today).levels.low_7).toBe(1000);
    const flat = daysOf([
      [3, 800],
      [0, 800],
    ]);
    expect(dealFigures(flat, 800, today).drop).toEqual({});
  });

  it('no price, no deal', () => {
    expect(dealFigures(daysOf([[1, 1000]]), null, today)).toEqual({ levels: {}, drop: {} });
  });

  it('drops are positive percentages below 100, and only deals are set', () => {
    const obs = fc.array(fc.tuple(fc.integer({ min: 0, max: 120 }), fc.integer({ min: 1, max: 1_000_000 })), {
      minLength: 1,
      maxLength: 60,
    });
    fc.assert(
      fc.property(obs, fc.integer({ min: 1, max: 1_000_000 }), (history, price) => {
        const days = withDayPrice(daysOf(history), price, today);
        const f = dealFigures(days, price, today);
        for (const [field, value] of Object.entries(f.drop)) {
          expect(DEAL_FIELDS).toContain(field);
          expect(value).toBeGreaterThan(0);
          expect(value).toBeLessThanOrEqual(100);
        }
        expect(f.levels.high_90).toBeGreaterThanOrEqual(price);
      }),
    );
  });

  it('percentBelow', () => {
    expect(percentBelow(750, 1000)).toBe(25);
    expect(percentBelow(1000, 1000)).toBe(0);
    expect(percentBelow(10, 0)).toBe(0);
  });
});

describe('days of history points', () => {
  const at = (ago: number) => new Date((today - ago) * 86_400_000 + 3_600_000);
  it('holds each price until the next point, within the kept days', () => {
    const days = daysOfPoints(
      [
        { at: at(200), price: 3000 },
        { at: at(2), price: null },
        { at: at(1), price: 1000 },
      ],
      today,
    );
    expect(days).toHaveLength(KEPT_DAYS);
    expect(days[0]).toEqual({ d: today - KEPT_DAYS + 1, lo: 3000, hi: 3000, sum: 3000, n: 1 });
    expect(days.at(-2)).toEqual({ d: today - 1, lo: 1000, hi: 1000, sum: 1000, n: 1 });
    expect(days.at(-1)).toEqual({ d: today, lo: 1000, hi: 1000, sum: 1000, n: 1 });
    expect(days.find((d) => d.d === today - 2)).toEqual({ d: today - 2, lo: 3000, hi: 3000, sum: 3000, n: 1 });
  });
});
