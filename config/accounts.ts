/**
 * Per-account caps, so that one account cannot take the shared upstream quota and storage from the
 * others. The defaults are far above what one person watches by hand; `0` turns a cap off. Parsed
 * by loadConfig (env.ts), enforced by WatchService and src/accounts/limits.ts.
 */
import { z } from 'zod';
import { int } from './parsers.js';

export const accountsEnvSchema = z.object({
  ACCOUNT_MAX_WATCHES: int(0, 100_000_000)
    .default(10_000)
    .meta({ description: 'ASIN watch entries one account may hold (a new one past it answers 422); `0` turns it off.' }),
  ACCOUNT_MAX_P1_WATCHES: int(0, 100_000_000).default(1_000).meta({
    description: 'Priority-1 ASIN watch entries one account may hold (adding or raising one past it answers 422); `0` turns it off.',
  }),
  ACCOUNT_MAX_PENDING_EAN: int(0, 1_000_000)
    .default(20)
    .meta({ description: 'EAN imports of one account queued or resolving at once (one more answers 429); `0` turns it off.' }),
  ACCOUNT_MAX_UPDATES_PER_DAY: int(0, 1_000_000_000).default(500).meta({
    description:
      'Forced-update calls one account may make a quota day, counted in Redis (a refused call spends nothing); `0` turns it off.',
  }),
  ACCOUNT_MAX_ALERTS: int(0, 1_000_000)
    .default(1_000)
    .meta({ description: 'Alerts one account may hold (one more answers 422, concurrent creations included); `0` turns it off.' }),
  ACCOUNT_MAX_ALERTS_PER_PRODUCT: int(0, 10_000).default(10).meta({
    description: 'Alerts one account may hold on one product in one country, every kind counted (one more answers 422); `0` turns it off.',
  }),
  ACCOUNT_MAX_ENDPOINTS: int(0, 1_000_000).default(50).meta({
    description:
      'Endpoints (where its alerts deliver: URLs, addresses) one account may hold; an alert needing a new one past it answers 422, `0` turns it off.',
  }),
  ACCOUNT_MAX_BROWSE_WATCHES: int(0, 1_000_000)
    .default(100)
    .meta({ description: 'Browse-node watch entries one account may hold (a new one past it answers 422); `0` turns it off.' }),
  ACCOUNT_MAX_EAN_PER_DAY: int(0, 100_000_000)
    .default(1_000)
    .meta({ description: 'EAN imports one account may start a quota day (one more answers 429 and writes nothing); `0` turns it off.' }),
  ACCOUNT_MAX_CRAWL_PAGES_PER_DAY: int(0, 100_000_000).default(2_000).meta({
    description:
      "Crawl pages (upstream calls) made a quota day for one account's browse watches; a crawl is charged to the watcher that crawled least, `0` turns it off.",
  }),
});

export interface AccountsConfig {
  /** ASIN watch entries one account may hold (0: no cap). */
  readonly maxWatches: number;
  /** Priority-1 ASIN watch entries one account may hold (0: no cap). */
  readonly maxP1Watches: number;
  /** EAN imports of one account queued or resolving at once (0: no cap). */
  readonly maxPendingEan: number;
  /** Forced-update calls one account may make a day (0: no cap). */
  readonly maxUpdatesPerDay: number;
  /** Alerts one account may hold (0: no cap). */
  readonly maxAlerts: number;
  /** Alerts one account may hold on one product of one country, every kind counted (0: no cap). */
  readonly maxAlertsPerProduct: number;
  /** Endpoints (targets its alerts deliver to) one account may hold (0: no cap). */
  readonly maxEndpoints: number;
  /** Browse-node watch entries one account may hold (0: no cap). */
  readonly maxBrowseWatches: number;
  /** EAN imports one account may start a quota day (0: no cap). */
  readonly maxEanPerDay: number;
  /** Crawl pages (upstream calls) made for one account's browse watches a quota day (0: no cap). */
  readonly maxCrawlPagesPerDay: number;
}

export function buildAccountsConfig(env: z.infer<typeof accountsEnvSchema>): AccountsConfig {
  return Object.freeze({
    maxWatches: env.ACCOUNT_MAX_WATCHES,
    maxP1Watches: env.ACCOUNT_MAX_P1_WATCHES,
    maxPendingEan: env.ACCOUNT_MAX_PENDING_EAN,
    maxUpdatesPerDay: env.ACCOUNT_MAX_UPDATES_PER_DAY,
    maxAlerts: env.ACCOUNT_MAX_ALERTS,
    maxAlertsPerProduct: env.ACCOUNT_MAX_ALERTS_PER_PRODUCT,
    maxEndpoints: env.ACCOUNT_MAX_ENDPOINTS,
    maxBrowseWatches: env.ACCOUNT_MAX_BROWSE_WATCHES,
    maxEanPerDay: env.ACCOUNT_MAX_EAN_PER_DAY,
    maxCrawlPagesPerDay: env.ACCOUNT_MAX_CRAWL_PAGES_PER_DAY,
  });
}
