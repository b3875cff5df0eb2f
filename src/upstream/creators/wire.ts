/**
 * The Creators API wire format (camelCase JSON), as zod schemas for every answer we read and types
 * for every request body we send, after Amazon's creatorsapi-python-sdk models. Every member of an
 * answer is optional, as the SDK has it (an item's `asin`, a browse node's `id`, a price's `amount`
 * and `currency` included), because resources that do not apply to an item are left out silently.
 * Lists of items, nodes and errors are read one member at a time (./read.ts), so that one member
 * that cannot be read is left out alone. Unknown members are kept (loose objects), since the
 * upstream adds fields over time and we store the raw item.
 */
import { z } from 'zod';

const displayValue = z.looseObject({ displayValue: z.string().optional() });
const displayValues = z.looseObject({ displayValues: z.array(z.string()).optional() });

export const moneySchema = z.looseObject({
  amount: z.number().nonnegative().optional(),
  currency: z.string().optional(),
  displayAmount: z.string().optional(),
});

export const offerListingSchema = z.looseObject({
  availability: z
    .looseObject({
      type: z.string().optional(),
      message: z.string().optional(),
      minOrderQuantity: z.number().optional(),
      maxOrderQuantity: z.number().optional(),
    })
    .optional(),
  condition: z.looseObject({ value: z.string().optional() }).optional(),
  isBuyBoxWinner: z.boolean().optional(),
  merchantInfo: z.looseObject({ id: z.string().optional(), name: z.string().optional() }).optional(),
  price: z.looseObject({ money: moneySchema.optional() }).optional(),
  type: z.string().optional(),
  violatesMAP: z.boolean().optional(),
});
export type WireOfferListing = z.infer<typeof offerListingSchema>;

const browseNodeRefSchema = z.looseObject({
  id: z.string().optional(),
  displayName: z.string().optional(),
  contextFreeName: z.string().optional(),
  isRoot: z.boolean().optional(),
  salesRank: z.number().optional(),
});

export const wireItemSchema = z.looseObject({
  asin: z.string().optional(),
  parentASIN: z.string().optional(),
  detailPageURL: z.string().optional(),
  itemInfo: z
    .looseObject({
      title: displayValue.optional(),
      byLineInfo: z.looseObject({ brand: displayValue.optional(), manufacturer: displayValue.optional() }).optional(),
      externalIds: z
        .looseObject({ eans: displayValues.optional(), upcs: displayValues.optional(), isbns: displayValues.optional() })
        .optional(),
    })
    .optional(),
  images: z
    .looseObject({
      primary: z
        .looseObject({
          small: z.looseObject({ url: z.string() }).optional(),
          medium: z.looseObject({ url: z.string() }).optional(),
          large: z.looseObject({ url: z.string() }).optional(),
        })
        .optional(),
    })
    .optional(),
  browseNodeInfo: z
    .looseObject({
      browseNodes: z.array(browseNodeRefSchema).optional(),
      websiteSalesRank: z.looseObject({ salesRank: z.number().optional(), displayName: z.string().optional() }).optional(),
    })
    .optional(),
  offersV2: z.looseObject({ listings: z.array(offerListingSchema).optional() }).optional(),
});
export type WireItem = z.infer<typeof wireItemSchema>;

/** One entry of `errors` beside a 200 result: per-item problems such as InvalidParameterValue. */
export const errorDataSchema = z.looseObject({ code: z.string().optional().default(''), message: z.string().optional().default('') });
export type WireErrorData = z.infer<typeof errorDataSchema>;

/** The members of a list, each read on its own (./read.ts). */
const members = z.array(z.unknown()).optional();

export const getItemsResponseSchema = z.looseObject({
  itemsResult: z.looseObject({ items: members }).optional(),
  errors: members,
});

export const searchItemsResponseSchema = z.looseObject({
  searchResult: z
    .looseObject({
      items: members,
      totalResultCount: z.number().optional(),
      searchURL: z.string().optional(),
    })
    .optional(),
  errors: members,
});

export const wireNodeLinkSchema = z.looseObject({
  id: z.string().optional(),
  displayName: z.string().optional(),
  contextFreeName: z.string().optional(),
  ancestor: z.unknown().optional(),
});

export const wireBrowseNodeSchema = z.looseObject({
  id: z.string().optional(),
  displayName: z.string().optional(),
  contextFreeName: z.string().optional(),
  isRoot: z.boolean().optional(),
  salesRank: z.number().optional(),
  ancestor: wireNodeLinkSchema.optional(),
  children: z.array(wireNodeLinkSchema).optional(),
});
export type WireBrowseNode = z.infer<typeof wireBrowseNodeSchema>;

export const getBrowseNodesResponseSchema = z.looseObject({
  browseNodesResult: z.looseObject({ browseNodes: members }).optional(),
  errors: members,
});

/**
 * Body of every non-2xx catalog answer; which members appear depends on the status (400 reason and
 * fieldList, 404 resourceId/resourceType, 429 serviceCode/quotaCode). `__type` and `code` are
 * where other AWS-style error bodies name the error; they are read too, so that such a body is not
 * taken for a stranger's.
 */
export const errorBodySchema = z.looseObject({
  type: z.string().optional(),
  __type: z.string().optional(),
  code: z.string().optional(),
  message: z.string().optional(),
  reason: z.string().optional(),
  fieldList: z.array(z.looseObject({ name: z.string(), message: z.string() })).optional(),
  serviceCode: z.string().optional(),
  quotaCode: z.string().optional(),
  resourceId: z.string().optional(),
  resourceType: z.string().optional(),
});
export type WireErrorBody = z.infer<typeof errorBodySchema>;

/** OAuth2 token endpoint answers (LwA and Cognito agree on these members). */
export const tokenResponseSchema = z.looseObject({
  access_token: z.string().min(1),
  token_type: z.string().optional(),
  expires_in: z.coerce.number().int().positive().optional(),
});
export const tokenErrorSchema = z.looseObject({ error: z.string(), error_description: z.string().optional() });

export interface GetItemsRequest {
  partnerTag: string;
  itemIds: string[];
  resources: string[];
  languagesOfPreference?: string[];
}

export interface SearchItemsRequest {
  partnerTag: string;
  keywords?: string;
  searchIndex?: string;
  browseNodeId?: string;
  itemCount?: number;
  itemPage?: number;
  resources: string[];
  languagesOfPreference?: string[];
}

export interface GetBrowseNodesRequest {
  partnerTag: string;
  browseNodeIds: string[];
  resources: string[];
  languagesOfPreference?: string[];
}

/** What we ask for on every item: enough for the product record and the EAN match. */
export const ITEM_RESOURCES: readonly string[] = Object.freeze([
  'itemInfo.title',
  'itemInfo.byLineInfo',
  'itemInfo.externalIds',
  'images.primary.large',
  'browseNodeInfo.browseNodes',
  'browseNodeInfo.websiteSalesRank',
  'offersV2.listings.price',
  'offersV2.listings.availability',
  'offersV2.listings.condition',
  'offersV2.listings.isBuyBoxWinner',
  'offersV2.listings.merchantInfo',
]);

export const BROWSE_NODE_RESOURCES: readonly string[] = Object.freeze(['browseNodes.ancestor', 'browseNodes.children']);

export const OPERATIONS = ['getItems', 'searchItems', 'getBrowseNodes'] as const;
export type Operation = (typeof OPERATIONS)[number];
export const CATALOG_PATH_PREFIX = '/catalog/v1/';
