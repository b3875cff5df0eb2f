import { z } from 'zod';
import type { WatchFields } from '../models/watch.js';
import { COUNTRY_IMPORT_STATUSES, IMPORT_STATUSES, type EanImportFields } from '../models/ean-import.js';
import { countrySchema } from '../core/identifiers.js';
import { dateTimeTextSchema, formatDateTime, formatNullableDateTime } from '../core/dates.js';

const dates = { created_at: dateTimeTextSchema, updated_at: dateTimeTextSchema };

export const asinWatchSchema = z
  .object({
    id: z.string(),
    type: z.literal('asin'),
    asin: z.string(),
    priority: z.union([z.literal(0), z.literal(1)]),
    source: z.enum(['api', 'ean']).meta({ description: 'ean: added by an EAN import' }),
    ...dates,
  })
  .meta({ id: 'AsinWatch' });

export const browseWatchSchema = z
  .object({
    id: z.string(),
    type: z.literal('browse'),
    browse: z.string(),
    last_crawl_at: dateTimeTextSchema.nullable(),
    last_crawl_count: z.number().int().nullable(),
    crawl_waiting_until: dateTimeTextSchema.nullable().meta({ description: 'Set while the crawl waits for the next quota day.' }),
    ...dates,
  })
  .meta({ id: 'BrowseWatch' });

/** A watch entry as the API shows it to its owner. */
export const watchEntrySchema = z.discriminatedUnion('type', [asinWatchSchema, browseWatchSchema]).meta({ id: 'WatchEntry' });
export type WatchEntry = z.infer<typeof watchEntrySchema>;

export const eanImportSchema = z
  .object({
    id: z.string(),
    ean: z.string(),
    status: z.enum(IMPORT_STATUSES),
    asins: z.array(z.string()).meta({ description: 'Every ASIN found so far, in every country.' }),
    countries: z.array(
      z.object({
        country: countrySchema,
        status: z.enum(COUNTRY_IMPORT_STATUSES),
        asins: z.array(z.string()),
        waiting_until: dateTimeTextSchema
          .nullable()
          .meta({ description: "Set while the country's next search page waits for the next quota day." }),
      }),
    ),
    ...dates,
  })
  .meta({ id: 'EanImport' });
export type EanImportRecord = z.infer<typeof eanImportSchema>;

export function presentWatch(w: WatchFields, timeZone: string): WatchEntry {
  const stamps = { created_at: formatDateTime(w.created_at, timeZone), updated_at: formatDateTime(w.updated_at, timeZone) };
  return w.kind === 'asin'
    ? { id: w._id.toHexString(), type: 'asin', asin: w.key, priority: w.priority, source: w.source, ...stamps }
    : {
        id: w._id.toHexString(),
        type: 'browse',
        browse: w.key,
        last_crawl_at: formatNullableDateTime(w.last_crawl_at, timeZone),
        last_crawl_count: w.last_crawl_count,
        crawl_waiting_until: formatNullableDateTime(w.crawl_waiting_until ?? null, timeZone),
        ...stamps,
      };
}

/** An EAN import: its status, each country's answer, and every ASIN found. */
export function presentImport(i: EanImportFields, timeZone: string): EanImportRecord {
  return {
    id: i._id.toHexString(),
    ean: i.ean,
    status: i.status,
    asins: [...new Set(i.countries.flatMap((c) => c.asins))],
    countries: i.countries.map((c) => ({
      country: c.country,
      status: c.status,
      asins: c.asins,
      waiting_until: formatNullableDateTime(c.waiting_until ?? null, timeZone),
    })),
    created_at: formatDateTime(i.created_at, timeZone),
    updated_at: formatDateTime(i.updated_at, timeZone),
  };
}
