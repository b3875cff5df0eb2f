import type { WatchFields } from '../models/watch.js';
import type { EanImportFields } from '../models/ean-import.js';
import { formatDateTime, formatNullableDateTime } from '../http/dates.js';

/** A watch entry as the API shows it to its owner. */
export function presentWatch(w: WatchFields, timeZone: string): Record<string, unknown> {
  const dates = { created_at: formatDateTime(w.created_at, timeZone), updated_at: formatDateTime(w.updated_at, timeZone) };
  return w.kind === 'asin'
    ? { id: w._id.toHexString(), type: 'asin', asin: w.key, priority: w.priority, source: w.source, ...dates }
    : {
        id: w._id.toHexString(),
        type: 'browse',
        browse: w.key,
        last_crawl_at: formatNullableDateTime(w.last_crawl_at, timeZone),
        last_crawl_count: w.last_crawl_count,
        // Beyond the contract: set while the crawl waits for the next quota day.
        crawl_waiting_until: formatNullableDateTime(w.crawl_waiting_until ?? null, timeZone),
        ...dates,
      };
}

/** An EAN import: its status, each country's answer, and every ASIN found. */
export function presentImport(i: EanImportFields, timeZone: string): Record<string, unknown> {
  return {
    id: i._id.toHexString(),
    ean: i.ean,
    status: i.status,
    asins: [...new Set(i.countries.flatMap((c) => c.asins))],
    // waiting_until: set while the country's next search page waits for the next quota day.
    countries: i.countries.map((c) => ({ country: c.country, status: c.status, asins: c.asins, waiting_until: formatNullableDateTime(c.waiting_until ?? null, timeZone) })),
    created_at: formatDateTime(i.created_at, timeZone),
    updated_at: formatDateTime(i.updated_at, timeZone),
  };
}
