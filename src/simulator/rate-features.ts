/**
 * How far a simulated product's change rate follows what the upstream reports of it: its sales
 * rank, its category and how many offers it lists. In real catalogues best sellers, busy
 * categories and contested listings are repriced more often; how much that holds is exactly what a
 * scheduler's prior has to find out, so the simulator makes it a setting: none (the rate is its own
 * draw, as without the setting), weak or strong.
 *
 * The pace draw stays uniform whatever the setting (a Gaussian copula: z = Σ loading · feature's z
 * + √(1 − Σ loading²) · own z, then Φ(z)), so the distribution of rates over products, and with it
 * the catalogue's mean interval, is the same at every strength; only which products are fast moves.
 */
import { cumulativeNormal, quantileNormal } from 'vega-statistics';

export const FEATURE_STRENGTHS = ['none', 'weak', 'strong'] as const;
export type FeatureStrength = (typeof FEATURE_STRENGTHS)[number];

/** Each feature's loading: the correlation of its normal score with the pace draw's. */
interface Loadings {
  readonly rank: number;
  readonly category: number;
  readonly offers: number;
}

/** Weak explains about a fifth of the pace draw's variance, strong about seven tenths. */
const LOADINGS: Record<FeatureStrength, Loadings> = {
  none: { rank: 0, category: 0, offers: 0 },
  weak: { rank: 0.35, category: 0.25, offers: 0.2 },
  strong: { rank: 0.6, category: 0.45, offers: 0.35 },
};

/** Keeps a draw of [0, 1) off the normal's infinite ends. */
const EDGE = 1e-12;
const score = (u: number): number => quantileNormal(Math.min(1 - EDGE, Math.max(EDGE, u)));

/** A product's draws of what the upstream reports of it, each uniform in [0, 1). */
export interface FeatureDraws {
  /** The base sales rank's draw: low is a best seller. */
  readonly rank: number;
  /** Its category's normal score (categoryScores): low is a busy category. */
  readonly category: number;
  /** Its offer level's draw: high lists more offers. */
  readonly offers: number;
}

/**
 * The pace draw (low: changes often) given the product's own draw and its features' draws at this
 * strength: `own` itself when the features carry nothing, and then `features` is never called (the
 * simulator answers every lookup through this, and each draw is a hash).
 */
export function paceDraw(strength: FeatureStrength, own: number, features: () => FeatureDraws): number {
  const l = LOADINGS[strength];
  if (l.rank === 0 && l.category === 0 && l.offers === 0) return own;
  const f = features();
  const rest = Math.sqrt(1 - l.rank ** 2 - l.category ** 2 - l.offers ** 2);
  const z = l.rank * score(f.rank) + l.category * f.category - l.offers * score(f.offers) + rest * score(own);
  return Math.min(1 - EDGE, Math.max(0, cumulativeNormal(z)));
}

/**
 * Each category's normal score: evenly spaced quantiles in an order drawn from `draw`, set to mean 0
 * and variance 1 over the list. A handful of categories with scores drawn independently would
 * shift and stretch the mixture (ten draws are rarely centred), and with it the rates over products.
 */
export function categoryScores(categories: readonly string[], draw: (category: string) => number): Map<string, number> {
  const order = [...categories].sort((a, b) => draw(a) - draw(b));
  const q = order.map((_, k) => quantileNormal((k + 0.5) / order.length));
  const mean = q.reduce((a, b) => a + b, 0) / q.length;
  const sd = Math.sqrt(q.reduce((a, b) => a + (b - mean) ** 2, 0) / q.length) || 1;
  return new Map(order.map((c, k) => [c, (q[k]! - mean) / sd]));
}

/**
 * Offers listed in an epoch (1 to 3): a fresh draw per epoch, which the product's offer level
 * tilts when the features carry information, so that a contested product lists more on average.
 */
export function offerCount(strength: FeatureStrength, epochDraw: number, offersLevel: () => number): number {
  if (strength === 'none') return 1 + Math.floor(epochDraw * 3);
  const u = cumulativeNormal(0.8 * score(offersLevel()) + 0.6 * score(epochDraw));
  return 1 + Math.min(2, Math.floor(u * 3));
}
