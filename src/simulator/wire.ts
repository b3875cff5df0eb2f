/**
 * The simulator's own reading of Creators API requests and its error bodies. Written from Amazon's
 * documentation and SDK, independently of the client's types, so that a client bug is not mirrored
 * here.
 */
import { z } from 'zod';

const partnerTag = z.string().min(1).max(64);
const resources = z.array(z.string()).default([]);
const languages = z.array(z.string()).max(1).optional();

/** Members Amazon's SDK model accepts; anything else (Marketplace, PartnerType, itemIdType…) is refused. */
export const getItemsRequestSchema = z.strictObject({
  partnerTag,
  itemIds: z.array(z.string()).min(1).max(10),
  resources,
  condition: z.string().optional(),
  currencyOfPreference: z.string().optional(),
  languagesOfPreference: languages,
  properties: z.record(z.string(), z.string()).optional(),
});

/**
 * CONFLICT: the SDK model lets itemCount reach 100, wrapper docs still say 10. We
 * enforce 10, the stricter reading: a client that passes here passes the real service either way.
 */
export const searchItemsRequestSchema = z.strictObject({
  partnerTag,
  keywords: z.string().min(1).optional(),
  searchIndex: z.string().optional(),
  browseNodeId: z.string().regex(/^\d+$/).optional(),
  itemCount: z.number().int().min(1).max(10).optional(),
  itemPage: z.number().int().min(1).max(10).optional(),
  resources,
  actor: z.string().optional(),
  artist: z.string().optional(),
  author: z.string().optional(),
  brand: z.string().optional(),
  title: z.string().optional(),
  availability: z.string().optional(),
  condition: z.string().optional(),
  deliveryFlags: z.array(z.string()).optional(),
  maxPrice: z.number().optional(),
  minPrice: z.number().optional(),
  minReviewsRating: z.number().optional(),
  minSavingPercent: z.number().optional(),
  sortBy: z.string().optional(),
  currencyOfPreference: z.string().optional(),
  languagesOfPreference: languages,
  properties: z.record(z.string(), z.string()).optional(),
});

export const getBrowseNodesRequestSchema = z.strictObject({
  partnerTag,
  browseNodeIds: z.array(z.string()).min(1).max(10),
  resources,
  languagesOfPreference: languages,
});

/** getItems/searchItems resources of Amazon's SDK enum (lowerCamel). */
export const ITEM_RESOURCE_NAMES: ReadonlySet<string> = new Set([
  'browseNodeInfo.browseNodes',
  'browseNodeInfo.browseNodes.ancestor',
  'browseNodeInfo.browseNodes.salesRank',
  'browseNodeInfo.websiteSalesRank',
  'customerReviews.count',
  'customerReviews.starRating',
  'images.primary.small',
  'images.primary.medium',
  'images.primary.large',
  'images.primary.highRes',
  'images.variants.small',
  'images.variants.medium',
  'images.variants.large',
  'images.variants.highRes',
  'itemInfo.byLineInfo',
  'itemInfo.contentInfo',
  'itemInfo.contentRating',
  'itemInfo.classifications',
  'itemInfo.externalIds',
  'itemInfo.features',
  'itemInfo.manufactureInfo',
  'itemInfo.productInfo',
  'itemInfo.technicalInfo',
  'itemInfo.title',
  'itemInfo.tradeInInfo',
  'parentASIN',
  'offersV2.listings.availability',
  'offersV2.listings.condition',
  'offersV2.listings.dealDetails',
  'offersV2.listings.isBuyBoxWinner',
  'offersV2.listings.loyaltyPoints',
  'offersV2.listings.merchantInfo',
  'offersV2.listings.price',
  'offersV2.listings.type',
  'searchRefinements',
]);
export const BROWSE_NODE_RESOURCE_NAMES: ReadonlySet<string> = new Set(['browseNodes.ancestor', 'browseNodes.children']);

/**
 * Keeps only the parts of a full synthetic item that `resources` asked for: the real service
 * answers asin and detailPageURL always and every other member only on request.
 */
export function selectResources(full: Record<string, unknown>, resources: ReadonlySet<string>): Record<string, unknown> {
  const f = full as {
    asin: string;
    detailPageURL: string;
    itemInfo: Record<string, unknown>;
    images: { primary: Record<string, unknown> };
    browseNodeInfo: Record<string, unknown>;
    offersV2: { listings: Record<string, unknown>[] };
  };
  const out: Record<string, unknown> = { asin: f.asin, detailPageURL: f.detailPageURL };
  const info: Record<string, unknown> = {};
  for (const k of ['title', 'byLineInfo', 'externalIds'])
    if (resources.has(`itemInfo.${k}`) && f.itemInfo[k] !== undefined) info[k] = f.itemInfo[k];
  if (Object.keys(info).length) out.itemInfo = info;
  const primary: Record<string, unknown> = {};
  for (const k of ['small', 'medium', 'large']) if (resources.has(`images.primary.${k}`)) primary[k] = f.images.primary[k];
  if (Object.keys(primary).length) out.images = { primary };
  const nodes: Record<string, unknown> = {};
  if ([...resources].some((r) => r.startsWith('browseNodeInfo.browseNodes'))) nodes.browseNodes = f.browseNodeInfo.browseNodes;
  if (resources.has('browseNodeInfo.websiteSalesRank')) nodes.websiteSalesRank = f.browseNodeInfo.websiteSalesRank;
  if (Object.keys(nodes).length) out.browseNodeInfo = nodes;
  const listingFields = [...resources].filter((r) => r.startsWith('offersV2.listings.')).map((r) => r.slice('offersV2.listings.'.length));
  if (listingFields.length) {
    out.offersV2 = {
      listings: f.offersV2.listings.map((l) => Object.fromEntries(Object.entries(l).filter(([k]) => listingFields.includes(k)))),
    };
  }
  return out;
}

export type ErrorKind =
  | 'ValidationException'
  | 'UnauthorizedException'
  | 'AccessDeniedException'
  | 'ResourceNotFoundException'
  | 'ThrottleException'
  | 'InternalServerException';

export const ERROR_STATUS: Readonly<Record<ErrorKind, number>> = {
  ValidationException: 400,
  UnauthorizedException: 401,
  AccessDeniedException: 403,
  ResourceNotFoundException: 404,
  ThrottleException: 429,
  InternalServerException: 500,
};

/** An error body of the §2 table: `type`, `message` and the members of that exception. */
export function errorBody(type: ErrorKind, message: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type, message, ...extra };
}
