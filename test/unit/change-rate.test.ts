import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/env.js';
import {
  estimateRate,
  posteriorRate,
  priorHours,
  refreshIntervalMs,
  WINDOW,
  withObservation,
  type Observation,
} from '../../src/scheduling/change-rate.js';

const HOUR = 3_600_000;
const config = (extra: Record<string, string> = {}) =>
  loadConfig({ NODE_ENV: 'test', REFRESH_INTERVAL_P1: '1h', REFRESH_INTERVAL_P0: '24h', REFRESH_MIN_INTERVAL: '5m', ...extra });
const adaptive = config();
const prior0 = priorHours(adaptive, 0);
const rate = (w: readonly Observation[]) => estimateRate(w, prior0);
const nextHours = (w: readonly Observation[]) => refreshIntervalMs(adaptive, 0, rate(w)) / HOUR;

let seed = 42;
const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;

/** Refreshes a product that changes every `changeEveryH` hours (Poisson, seeded) on the schedule its estimate gives. */
function follow(changeEveryH: number, refreshes: number, start: readonly Observation[] = []): Observation[] {
  let w = [...start];
  for (let i = 0; i < refreshes; i++) {
    const hours = nextHours(w);
    w = withObservation(w, { hours, changed: random() < 1 - Math.exp(-hours / changeEveryH) });
  }
  return w;
}

describe('the change-rate estimate', () => {
  it('with no history is the prior: a first interval between the bounds (their geometric mean)', () => {
    expect(prior0).toBeCloseTo(Math.sqrt((5 / 60) * 24), 6);
    expect(rate([])).toBeCloseTo(1 / prior0, 6);
    expect(nextHours([])).toBeCloseTo(prior0, 6);
  });

  it('settles within a factor of two of a steady product’s true rate, fast or slow (median over its refreshes)', () => {
    for (const everyH of [0.5, 2, 6]) {
      const ratios: number[] = [];
      let w: Observation[] = follow(everyH, 20);
      for (let i = 0; i < 80; i++) {
        w = follow(everyH, 1, w);
        ratios.push(rate(w) * everyH);
      }
      const median = ratios.sort((a, b) => a - b)[40]!;
      expect(median, `a product changing every ${everyH} h`).toBeGreaterThan(0.5);
      expect(median, `a product changing every ${everyH} h`).toBeLessThan(2);
    }
    // Ranks them in the right order, which is what the planner needs.
    expect(rate(follow(0.25, 100))).toBeGreaterThan(rate(follow(2, 100)));
    expect(rate(follow(2, 100))).toBeGreaterThan(rate(follow(24, 100)));
  });

  it('backs off fast while nothing changes, up to the priority’s interval', () => {
    let w: Observation[] = [];
    const intervals: number[] = [];
    for (let i = 0; i < 6; i++) {
      intervals.push(nextHours(w));
      w = withObservation(w, { hours: intervals.at(-1)!, changed: false });
    }
    expect(intervals[1]! / intervals[0]!).toBeGreaterThan(2);
    for (let i = 1; i < intervals.length; i++) expect(intervals[i]!).toBeGreaterThanOrEqual(intervals[i - 1]!);
    expect(intervals.at(-1)).toBe(24);
  });

  it('follows a burst up within a window of refreshes, and back down after it', () => {
    const calm = follow(24, 40);
    let w = calm;
    for (let i = 0; i < WINDOW + 4; i++) w = withObservation(w, { hours: nextHours(w), changed: true });
    expect(rate(w)).toBeGreaterThan(5 * rate(calm));
    expect(nextHours(w)).toBeLessThan(1);
    for (let i = 0; i < WINDOW; i++) w = withObservation(w, { hours: nextHours(w), changed: false });
    expect(nextHours(w)).toBe(24);
  });

  it('counts a moved value as more than one change when the interval was long for the rate', () => {
    const once = rate([{ hours: 2, changed: true }]);
    // One change in 2 h plus the prior would be (0.5 + 1) / (0.5·prior + 2); the censored count is more.
    expect(once).toBeGreaterThan(1.5 / (0.5 * prior0 + 2));
    expect(withObservation([], { hours: -1, changed: false })).toEqual([{ hours: 0, changed: false }]);
    expect(withObservation(follow(1, 20), { hours: 1, changed: true })).toHaveLength(WINDOW);
  });
});

describe('the estimate against known Poisson processes', () => {
  /** 4,000 products changing at `lambda` per hour, each looked at WINDOW times every `h` hours: the estimates over λ. */
  function estimates(lambda: number, h: number): number[] {
    const out: number[] = [];
    for (let r = 0; r < 4_000; r++) {
      let w: Observation[] = [];
      for (let i = 0; i < WINDOW; i++) w = withObservation(w, { hours: h, changed: random() < 1 - Math.exp(-lambda * h) });
      out.push(rate(w) / lambda);
    }
    return out.sort((a, b) => a - b);
  }

  it('is unbiased in the median within 10 % after a window of looks, at 0.3 to 2 expected changes a look', () => {
    for (const expected of [0.3, 0.5, 1, 2]) {
      const ratios = estimates(0.5, expected / 0.5);
      const median = ratios[2_000]!;
      const mean = ratios.reduce((a, b) => a + b, 0) / ratios.length;
      expect(median, `median at ${expected} changes a look`).toBeGreaterThan(0.9);
      expect(median, `median at ${expected} changes a look`).toBeLessThan(1.1);
      // The mean runs high (at most 45 % here): a window in which every look saw a move says only
      // "faster than one a look", which the prior alone keeps finite.
      expect(mean, `mean at ${expected} changes a look`).toBeGreaterThan(0.95);
      expect(mean, `mean at ${expected} changes a look`).toBeLessThan(1.45);
    }
  });
});

describe('refreshIntervalMs', () => {
  it('keeps within REFRESH_MIN_INTERVAL and the priority’s interval', () => {
    expect(refreshIntervalMs(adaptive, 0, 1_000)).toBe(5 * 60_000);
    expect(refreshIntervalMs(adaptive, 0, 1e-9)).toBe(24 * HOUR);
    expect(refreshIntervalMs(adaptive, 0, 0)).toBe(24 * HOUR);
    // Priority 1 is never refreshed less often than its interval, however still the product.
    expect(refreshIntervalMs(adaptive, 1, 1e-9)).toBe(HOUR);
    expect(refreshIntervalMs(adaptive, 1, 1_000)).toBe(5 * 60_000);
    expect(refreshIntervalMs(adaptive, 0, 0.5)).toBe(2 * HOUR);
    expect(refreshIntervalMs(adaptive, 0, null)).toBe(24 * HOUR);
  });

  it('is the priority’s interval under SCHEDULING=fixed', () => {
    const fixed = config({ SCHEDULING: 'fixed' });
    expect(refreshIntervalMs(fixed, 0, 1_000)).toBe(24 * HOUR);
    expect(refreshIntervalMs(fixed, 1, 1e-9)).toBe(HOUR);
  });

  it('never lets the minimum pass a priority’s interval', () => {
    const tight = config({ REFRESH_MIN_INTERVAL: '2h' });
    expect(tight.refresh.minIntervalMs).toBe(HOUR);
    expect(refreshIntervalMs(tight, 1, 1_000)).toBe(HOUR);
  });
});

describe('posteriorRate: the estimate with the country’s distribution as prior', () => {
  // Most products change about once a day, a few every hour.
  const prior = [
    { rate: 1 / 24, count: 900 },
    { rate: 1, count: 100 },
  ];
  it('one look leaves it between the rates the catalogue has; many looks settle it', () => {
    const moved = (n: number) => Array.from({ length: n }, () => ({ hours: 2, changed: true }));
    // A move in 2 h is 11 times likelier for an hourly product, against odds of 1 to 9: about even.
    const one = posteriorRate(moved(1), prior)!;
    expect(one).toBeGreaterThan(0.4);
    expect(one).toBeLessThan(0.7);
    // Eight looks two hours apart that all moved: an hourly product.
    expect(posteriorRate(moved(8), prior)!).toBeGreaterThan(0.95);
    // Eight still looks: a daily one.
    const still = Array.from({ length: 8 }, () => ({ hours: 2, changed: false }));
    expect(posteriorRate(still, prior)!).toBeLessThan(0.045);
  });

  it('is null without a prior or a look, and weighs the prior by its counts', () => {
    expect(posteriorRate([], prior)).toBeNull();
    expect(posteriorRate([{ hours: 1, changed: true }], [])).toBeNull();
    const even = posteriorRate(
      [{ hours: 24, changed: true }],
      [
        { rate: 1 / 24, count: 1 },
        { rate: 1, count: 1 },
      ],
    )!;
    const skewed = posteriorRate(
      [{ hours: 24, changed: true }],
      [
        { rate: 1 / 24, count: 99 },
        { rate: 1, count: 1 },
      ],
    )!;
    expect(skewed).toBeLessThan(even);
  });
});
