import mongoose, { type Connection, type Types } from 'mongoose';
import type { Country } from '../core/identifiers.js';
import { PRODUCT_SHOWN_FIELDS, type ShownProduct } from '../catalog/present.js';
import { productModel } from '../models/product.js';
import { historyPointModel, type HistoryPointFields } from '../models/history-point.js';
import { deliveryModel } from '../models/delivery.js';
import type { WatchFields } from '../models/watch.js';
import type { WatchService } from '../watch/service.js';
import type { AlertRules } from '../alerts/rules/service.js';
import type { Endpoints } from '../alerts/endpoints/endpoints.js';
import type { Endpoint } from '../alerts/endpoints/endpoint.js';
import type { AlertView } from '../alerts/rules/alert.js';
import type { DeliveryRecord } from '../alerts/deliveries/records.js';
import { LIST_QUERY_MAX_MS } from '../db/mongo.js';

/**
 * What the account page shows, read in a fixed handful of bounded queries, each on an index: the
 * first page of watched ASINs, of watched browse nodes, of alerts and of endpoints (each a page and
 * its count), the products those ASINs are in the configured countries, the newest history points
 * among them, and the account's newest deliveries, of which each alert gets its latest. The page asks for one of these instead of a
 * request per product and alert.
 */

/** Watched ASINs, browse nodes, alerts and endpoints in a summary; the rest are on the lists' next pages. */
export const SUMMARY_PAGE = 100;
/** History points in a summary: the newest among the summary's products, within RECENT_DAYS. */
export const RECENT_CHANGES = 50;
export const RECENT_DAYS = 30;
/** The account's newest deliveries that the alerts' latest are found among. */
export const DELIVERY_WINDOW = 500;

export interface AccountSummary {
  readonly watches: { readonly items: WatchFields[]; readonly total: number };
  readonly browseNodes: { readonly items: WatchFields[]; readonly total: number };
  readonly endpoints: { readonly items: Endpoint[]; readonly total: number };
  readonly products: ShownProduct[];
  readonly changes: HistoryPointFields[];
  readonly alerts: { readonly items: AlertView[]; readonly total: number };
  /** The latest delivery of each alert that has one among the account's DELIVERY_WINDOW newest, by alert id. */
  readonly latestDelivery: ReadonlyMap<string, DeliveryRecord>;
}

export interface SummaryDeps {
  readonly mongo: Connection;
  readonly watches: Pick<WatchService, 'list'>;
  readonly alerts: Pick<AlertRules, 'list'>;
  readonly endpoints: Pick<Endpoints, 'list'>;
  readonly countries: readonly Country[];
}

export async function accountSummary(deps: SummaryDeps, userId: Types.ObjectId, now = new Date()): Promise<AccountSummary> {
  const first = { page: 1, limit: SUMMARY_PAGE };
  const [watches, browseNodes, alerts, endpoints, deliveries] = await Promise.all([
    deps.watches.list(userId, { kind: 'asin', ...first }),
    deps.watches.list(userId, { kind: 'browse', ...first }),
    deps.alerts.list(userId, first),
    deps.endpoints.list(userId, first),
    newestDeliveries(deps.mongo, userId),
  ]);
  const asins = [...new Set(watches.items.map((w) => w.key))];
  const products = asins.length ? await productsOf(deps.mongo, asins, deps.countries) : [];
  const changes = products.length ? await newestChanges(deps.mongo, products, now) : [];
  const latestDelivery = new Map<string, DeliveryRecord>();
  // Newest first: the first one seen of an alert is its latest.
  for (const d of deliveries)
    for (const id of d.alert_ids ?? [d.alert_id]) if (!latestDelivery.has(id.toHexString())) latestDelivery.set(id.toHexString(), d);
  return { watches, browseNodes, products, changes, alerts, endpoints, latestDelivery };
}

// The ids and countries below come from our own reads and the configuration, so the operators are trusted.

function productsOf(mongo: Connection, asins: readonly string[], countries: readonly Country[]): Promise<ShownProduct[]> {
  return productModel(mongo)
    .find({ country: mongoose.trusted({ $in: countries }), asin: mongoose.trusted({ $in: asins }) })
    .sort({ country: 1, asin: 1 })
    .select(PRODUCT_SHOWN_FIELDS)
    .maxTimeMS(LIST_QUERY_MAX_MS)
    .lean<ShownProduct[]>();
}

/** On (country, asin, at): the products' points of the last RECENT_DAYS, newest first. */
function newestChanges(mongo: Connection, products: readonly ShownProduct[], now: Date): Promise<HistoryPointFields[]> {
  return historyPointModel(mongo)
    .find({
      country: mongoose.trusted({ $in: [...new Set(products.map((p) => p.country))] }),
      asin: mongoose.trusted({ $in: [...new Set(products.map((p) => p.asin))] }),
      at: mongoose.trusted({ $gte: new Date(now.getTime() - RECENT_DAYS * 86_400_000) }),
    })
    .sort({ at: -1 })
    .limit(RECENT_CHANGES)
    .maxTimeMS(LIST_QUERY_MAX_MS)
    .lean<HistoryPointFields[]>();
}

/** On (user_id, created_at, _id). */
function newestDeliveries(mongo: Connection, userId: Types.ObjectId): Promise<DeliveryRecord[]> {
  return deliveryModel(mongo)
    .find({ user_id: userId })
    .sort({ created_at: -1, _id: -1 })
    .limit(DELIVERY_WINDOW)
    .maxTimeMS(LIST_QUERY_MAX_MS)
    .lean<DeliveryRecord[]>();
}
