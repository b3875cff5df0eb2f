/**
 * A prior for a product's change rate from what the upstream tells of it: its sales rank, its
 * category, how many offers it lists and its price. A product is looked at a few times a day and
 * each look says only "moved or not", so its own looks leave its rate vague for days; products that
 * resemble it say where to start. How far they do is learned, per feature, from the catalogue's own
 * estimates, so a feature that predicts nothing gets no weight and the prior stays the country's.
 *
 * The model is additive in log-rate: ln λ = μ + Σ_f e_f(level) + residual, fitted by backfitting
 * over cells of products that share every level. Each level's effect is shrunk towards 0 by the
 * random-effects estimate of its feature's spread (one-way ANOVA's method of moments: a level of n
 * products keeps n τ² / (n τ² + σ²) of its raw effect), the empirical-Bayes estimator large
 * crawlers use for URL-pattern priors. A product's prior is then the country's distribution of
 * estimates moved by its levels' effects and narrowed by the share of the spread they explain.
 */
import { z } from 'zod';
import { RATE_FEATURES, type RateFeature, type RateLevels } from '../core/rate-levels.js';

/** Backfitting passes: the effects settle within a few when the features are nearly independent. */
const PASSES = 4;
/** The narrowest a product's prior gets against the country's, however much the features explain. */
const MIN_SPREAD = 0.3;
/**
 * Looks a product's estimate must rest on to be fitted from: with fewer, estimates sit near their
 * own prior and the features' effects would be fitted to noise (bench:adaptive, strong features:
 * the posteriors' 90th-percentile error 3.2× fitting from every estimate, 3.1× from 6 looks on).
 */
export const FIT_MIN_LOOKS = 6;
/**
 * A feature's levels must differ by more than chance for it to move any prior: its between-levels
 * sum of squares over σ² must pass the 99.9th percentile of χ² with (levels − 1) degrees of
 * freedom (Wilson–Hilferty's approximation): a country is tuned 144 times a day, four features
 * each time, and at the 99th a few of those would pass by chance every day. The moments' estimate
 * of a spread alone is biased up where a feature has many levels and few products, and acting on
 * that moved priors by noise (bench:adaptive without informative features: every objective a
 * little worse with it than without).
 */
const Z_999 = 3.09;
function beyondChance(betweenSS: number, sigma2: number, dof: number): boolean {
  const c = 2 / (9 * dof);
  return betweenSS / sigma2 > dof * (1 - c + Z_999 * Math.sqrt(c)) ** 3;
}
/** Fewer products than this with an estimate and the country's prior is kept as it is. */
const MIN_PRODUCTS = 50;

/** Products that share every level: their count and the sum and sum of squares of ln(rate). */
export interface RateCell {
  readonly levels: RateLevels;
  readonly n: number;
  readonly sum: number;
  readonly sumSq: number;
}

/** Levels a feature keeps an effect for, those of the most products first: a policy stays small. */
export const MAX_LEVELS = 500;

/** What a tuning learned of the features, as the policy stores it. */
export const groupModelSchema = z.object({
  /** μ: the mean ln(rate) over products. */
  mean: z.number(),
  /** The residual spread of ln(rate) against the whole (standard deviations), in [MIN_SPREAD, 1]. */
  spread: z.number().min(MIN_SPREAD).max(1),
  /** Each feature's shrunk effect on ln(rate) per level (levels of no effect left out). */
  effects: z.record(
    z.enum(RATE_FEATURES),
    z.record(z.string(), z.number()).refine((r) => Object.keys(r).length <= MAX_LEVELS),
  ),
  /** The share of ln(rate)'s variance each feature's effects account for. */
  explained: z.record(z.enum(RATE_FEATURES), z.number().min(0)),
});
export type GroupModel = z.infer<typeof groupModelSchema>;

const emptyByFeature = <T>(make: () => T): Record<RateFeature, T> =>
  Object.fromEntries(RATE_FEATURES.map((f) => [f, make()])) as Record<RateFeature, T>;

/** Fits the model to the cells; null when too few products have an estimate to learn from. */
export function fitGroupModel(cells: readonly RateCell[]): GroupModel | null {
  const live = cells.filter((c) => c.n > 0 && Number.isFinite(c.sum) && Number.isFinite(c.sumSq));
  const total = live.reduce((s, c) => s + c.n, 0);
  if (total < MIN_PRODUCTS) return null;
  const mean = live.reduce((s, c) => s + c.sum, 0) / total;
  const cellMean = live.map((c) => c.sum / c.n);
  // Each cell's own spread about its mean: no level can explain it.
  const within = live.reduce((s, c, i) => s + Math.max(0, c.sumSq - c.n * cellMean[i]! ** 2), 0);
  const totalSS = live.reduce((s, c, i) => s + c.n * (cellMean[i]! - mean) ** 2, within);
  if (!(totalSS > 0)) return null;
  const effects = emptyByFeature(() => new Map<string, number>());
  const effectOf = (c: RateCell, f: RateFeature): number => effects[f].get(c.levels[f]) ?? 0;
  for (let pass = 0; pass < PASSES; pass++) {
    for (const f of RATE_FEATURES) {
      // The cells' means less μ and the other features' effects: what this feature may explain.
      const partial = live.map((c, i) => cellMean[i]! - mean - RATE_FEATURES.reduce((s, g) => (g === f ? s : s + effectOf(c, g)), 0));
      const byLevel = new Map<string, { n: number; sum: number }>();
      live.forEach((c, i) => {
        const l = byLevel.get(c.levels[f]) ?? { n: 0, sum: 0 };
        l.n += c.n;
        l.sum += c.n * partial[i]!;
        byLevel.set(c.levels[f], l);
      });
      const partialSS = live.reduce((s, c, i) => s + c.n * partial[i]! ** 2, within);
      const betweenSS = [...byLevel.values()].reduce((s, l) => s + l.sum ** 2 / l.n, 0);
      const levels = byLevel.size;
      effects[f].clear();
      if (levels < 2 || total <= levels) continue;
      const sigma2 = Math.max(1e-12, (partialSS - betweenSS) / (total - levels));
      const sumN2 = [...byLevel.values()].reduce((s, l) => s + l.n ** 2, 0);
      const tau2 = Math.max(0, (betweenSS - (levels - 1) * sigma2) / (total - sumN2 / total));
      if (tau2 === 0 || !beyondChance(betweenSS, sigma2, levels - 1)) continue;
      const kept = [...byLevel].sort((a, b) => b[1].n - a[1].n).slice(0, MAX_LEVELS);
      for (const [level, l] of kept) effects[f].set(level, ((l.sum / l.n) * (l.n * tau2)) / (l.n * tau2 + sigma2));
    }
  }
  const fitted = live.map((c) => mean + RATE_FEATURES.reduce((s, f) => s + effectOf(c, f), 0));
  const residualSS = live.reduce((s, c, i) => s + c.n * (cellMean[i]! - fitted[i]!) ** 2, within);
  const explained = emptyByFeature(() => 0);
  for (const f of RATE_FEATURES) explained[f] = live.reduce((s, c) => s + c.n * effectOf(c, f) ** 2, 0) / totalSS;
  return {
    mean,
    spread: Math.min(1, Math.max(MIN_SPREAD, Math.sqrt(residualSS / totalSS))),
    effects: Object.fromEntries(RATE_FEATURES.map((f) => [f, Object.fromEntries(effects[f])])) as GroupModel['effects'],
    explained,
  };
}

/**
 * The prior of a product with these levels: the country's estimates (by rate, with their counts)
 * moved by the levels' effects and narrowed about μ by the model's spread. The country's own when
 * there is no model or no level is known to it.
 */
export function groupPrior(
  model: GroupModel | null | undefined,
  levels: RateLevels | null | undefined,
  prior: readonly { readonly rate: number; readonly count: number }[],
): readonly { readonly rate: number; readonly count: number }[] {
  if (!model || !levels) return prior;
  const shift = RATE_FEATURES.reduce((s, f) => s + (model.effects[f][levels[f]] ?? 0), 0);
  if (shift === 0 && model.spread === 1) return prior;
  return prior.map(({ rate, count }) => ({ rate: Math.exp(model.mean + shift + model.spread * (Math.log(rate) - model.mean)), count }));
}
