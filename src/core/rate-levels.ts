/**
 * What an upstream answer tells of a product that may predict how often it changes: the decade of
 * its sales rank, its first browse node, how many offers it lists and the half-decade of its price.
 * Products keep these levels (`rate_levels`) and the scheduler's priors learn from them
 * (src/scheduling/rate-groups.ts).
 */
import type { UpstreamItem } from './product.js';

export const RATE_FEATURES = ['rank', 'category', 'offers', 'price'] as const;
export type RateFeature = (typeof RATE_FEATURES)[number];

/** A product's level of each feature ('?' where the answer did not say). */
export type RateLevels = Readonly<Record<RateFeature, string>>;

/** The level of a feature the answer did not give. */
export const UNKNOWN_LEVEL = '?';
/** Offer counts past this are one level. */
const MANY_OFFERS = 5;

/** The levels of what an answer says of a product: decades of rank, category, offers, half-decades of price. */
export function rateLevelsOf(item: Pick<UpstreamItem, 'salesRank' | 'browseNodes' | 'offers' | 'price'>): RateLevels {
  const node = item.browseNodes[0];
  return {
    rank: item.salesRank ? `r${Math.floor(Math.log10(item.salesRank))}` : UNKNOWN_LEVEL,
    category: node ? (node.name ?? `#${node.id}`) : UNKNOWN_LEVEL,
    offers: `o${Math.min(item.offers, MANY_OFFERS)}`,
    price: item.price && item.price.amount > 0 ? `p${Math.floor(2 * Math.log10(item.price.amount))}` : UNKNOWN_LEVEL,
  };
}
