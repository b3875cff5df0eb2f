/**
 * Priors from the products' features: a feature that predicts the rate gets its effect back, one
 * that does not gets none (so the country's prior stays), and a product's prior moves with its levels.
 */
import { describe, expect, it } from 'vitest';
import { rateLevelsOf, type RateLevels } from '../../src/core/rate-levels.js';
import { fitGroupModel, groupModelSchema, groupPrior, type RateCell } from '../../src/scheduling/rate-groups.js';
import { prng } from '../../src/seed/fake.js';

/** A standard normal draw (Box–Muller). */
const normal = (u: () => number): number => Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u());

const RANK_EFFECT: Record<string, number> = { r1: 1.5, r3: 0, r5: -1.5 };

/** Products whose ln(rate) is −2 + the rank band's effect + noise; category, offers and price say nothing. */
function catalogue(n: number, rankMatters: boolean, seed = 1): { cells: RateCell[]; products: { levels: RateLevels; log: number }[] } {
  const u = prng(seed);
  const products = Array.from({ length: n }, () => {
    const rank = ['r1', 'r3', 'r5'][Math.floor(u() * 3)]!;
    const levels: RateLevels = {
      rank,
      category: ['Toys', 'Books', 'Garden', 'Kitchen'][Math.floor(u() * 4)]!,
      offers: `o${1 + Math.floor(u() * 3)}`,
      price: `p${5 + Math.floor(u() * 3)}`,
    };
    return { levels, log: -2 + (rankMatters ? RANK_EFFECT[rank]! : 0) + normal(u) };
  });
  const cells = new Map<string, { levels: RateLevels; n: number; sum: number; sumSq: number }>();
  for (const p of products) {
    const key = JSON.stringify(p.levels);
    const c = cells.get(key) ?? { levels: p.levels, n: 0, sum: 0, sumSq: 0 };
    c.n += 1;
    c.sum += p.log;
    c.sumSq += p.log ** 2;
    cells.set(key, c);
  }
  return { cells: [...cells.values()], products };
}

describe('rate groups', () => {
  it('reads levels from an answer: decades of rank, the first node, offers, half-decades of price', () => {
    expect(
      rateLevelsOf({ salesRank: 4_321, browseNodes: [{ id: '1', name: 'Toys' }], offers: 9, price: { amount: 1_500, currency: 'JPY' } }),
    ).toEqual({ rank: 'r3', category: 'Toys', offers: 'o5', price: 'p6' });
    expect(rateLevelsOf({ salesRank: null, browseNodes: [{ id: '77', name: null }], offers: 0, price: null })).toEqual({
      rank: '?',
      category: '#77',
      offers: 'o0',
      price: '?',
    });
  });

  it('learns the effect of a feature that predicts the rate, and none of those that do not', () => {
    const model = fitGroupModel(catalogue(4_000, true).cells)!;
    expect(groupModelSchema.parse(model)).toEqual(model);
    expect(model.mean).toBeCloseTo(-2, 1);
    for (const [level, effect] of Object.entries(RANK_EFFECT)) expect(model.effects.rank[level]).toBeCloseTo(effect, 1);
    // Rank's effects are 1.5² · 2/3 = 1.5 of the variance 2.5: 0.6 of it.
    expect(model.explained.rank).toBeGreaterThan(0.5);
    for (const f of ['category', 'offers', 'price'] as const) expect(model.explained[f]).toBeLessThan(0.01);
    expect(model.spread).toBeCloseTo(Math.sqrt(1 / 2.5), 1);
  });

  it('keeps the country’s prior where no feature predicts the rate', () => {
    const model = fitGroupModel(catalogue(4_000, false).cells)!;
    for (const f of ['rank', 'category', 'offers', 'price'] as const) {
      expect(model.explained[f]).toBeLessThan(0.01);
      expect(model.effects[f]).toEqual({});
    }
    expect(model.spread).toBe(1);
    const prior = [
      { rate: 0.05, count: 10 },
      { rate: 0.5, count: 3 },
    ];
    expect(groupPrior(model, { rank: 'r1', category: 'Toys', offers: 'o1', price: 'p5' }, prior)).toBe(prior);
  });

  it('moves a product’s prior by its levels and narrows it about the mean', () => {
    const model = fitGroupModel(catalogue(4_000, true).cells)!;
    const prior = [{ rate: Math.exp(-2), count: 1 }];
    const fast = groupPrior(model, { rank: 'r1', category: 'Toys', offers: 'o1', price: 'p5' }, prior)[0]!;
    const slow = groupPrior(model, { rank: 'r5', category: 'Toys', offers: 'o1', price: 'p5' }, prior)[0]!;
    expect(Math.log(fast.rate) + 2).toBeCloseTo(1.5, 0);
    expect(Math.log(slow.rate) + 2).toBeCloseTo(-1.5, 0);
    // Unknown levels and no model leave the prior as it is.
    expect(groupPrior(null, { rank: 'r1', category: '?', offers: 'o1', price: '?' }, prior)).toBe(prior);
  });

  it('learns nothing from a handful of products', () => {
    expect(fitGroupModel(catalogue(30, true).cells)).toBeNull();
  });
});
