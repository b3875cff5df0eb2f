/**
 * The product record: what the upstream tells us about one ASIN in one country, normalised, and
 * what the API answers for it. The contract leaves the record open; this is our definition, and
 * docs/api.md ("Product record") documents it.
 *
 * Terminology:
 * - item: one upstream answer for one ASIN (UpstreamItem), in camelCase as our code uses it;
 * - product: the stored document per (country, asin), with refresh state;
 * - record: the product as the API serves it (ProductRecord), in snake_case like the contract.
 */
import { z } from 'zod';
import { countrySchema } from './identifiers.js';
import { dateTimeTextSchema as dateText } from './dates.js';

/** Money in integer minor units (yen, cents) with its ISO 4217 currency: no floating point. */
export const priceSchema = z.object({
  amount: z.number().int().nonnegative(),
  currency: z.string().regex(/^[A-Z]{3}$/),
});
export type Price = z.infer<typeof priceSchema>;

export const AVAILABILITY = ['in_stock', 'out_of_stock', 'preorder', 'backorder', 'unknown'] as const;
export const availabilitySchema = z.enum(AVAILABILITY);
export type Availability = z.infer<typeof availabilitySchema>;

export const browseNodeRefSchema = z.object({ id: z.string(), name: z.string().nullable() });

/** One item as the upstream port returns it (any adapter: Creators API, simulator, later Keepa). */
export const upstreamItemSchema = z.object({
  asin: z.string(),
  title: z.string().nullable(),
  brand: z.string().nullable(),
  image: z.string().nullable(),
  url: z.string().nullable(),
  eans: z.array(z.string()),
  /** null: the item exists but has no offer (the explicit "no offer" state), not "unknown". */
  price: priceSchema.nullable(),
  availability: availabilitySchema,
  /** Whether `price` is the Buy Box winner's (false with no price). */
  buyBox: z.boolean(),
  salesRank: z.number().int().positive().nullable(),
  browseNodes: z.array(browseNodeRefSchema),
  /** Offers the answer listed (0 in the "no offer" state). */
  offers: z.number().int().nonnegative(),
  /** The upstream's own item object, kept for debugging and later fields. */
  raw: z.unknown(),
});
export type UpstreamItem = z.infer<typeof upstreamItemSchema>;

/** What happened to one ASIN of a request. */
export const ITEM_OUTCOMES = ['found', 'not_found', 'not_accessible'] as const;
export type ItemOutcome = (typeof ITEM_OUTCOMES)[number];

/** Refresh state of a stored product. */
export const REFRESH_STATUSES = ['pending', 'ok', 'not_found', 'not_accessible', 'error'] as const;
export type RefreshStatus = (typeof REFRESH_STATUSES)[number];

/** The API's product record. Dates are `YYYY-MM-DD HH:MM:SS` in APP_TIMEZONE, as in the public directory. */
export const productRecordSchema = z
  .object({
    asin: z.string(),
    country: countrySchema,
    ean: z.array(z.string()),
    title: z.string().nullable(),
    brand: z.string().nullable(),
    image: z.string().nullable(),
    url: z.string().nullable(),
    price: priceSchema.nullable(),
    availability: availabilitySchema,
    sales_rank: z.number().int().nullable(),
    browse_nodes: z.array(browseNodeRefSchema),
    created_at: dateText,
    updated_at: dateText.nullable(),
    refresh: z.object({
      status: z.enum(REFRESH_STATUSES),
      /** 1 or 0: the highest priority among the users who watch it; null when nobody does. */
      priority: z.union([z.literal(0), z.literal(1)]).nullable(),
      next_at: dateText.nullable(),
      last_attempt_at: dateText.nullable(),
      changes_per_day: z.number().nonnegative().nullable().meta({
        description:
          'Estimated changes of price or availability a day, learned from its refreshes; it sets next_at under adaptive scheduling. Null before the first refresh.',
      }),
    }),
  })
  .meta({ id: 'ProductRecord', description: 'One product in one country, as the catalogue holds it.' });
export type ProductRecord = z.infer<typeof productRecordSchema>;
