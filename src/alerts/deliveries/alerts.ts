import mongoose, { Types, type Connection } from 'mongoose';
import { DELIVERY_DB_TIMEOUT_MS } from '../../../config/alerts.js';
import type { Country } from '../../core/identifiers.js';
import { OBJECT_ID_RE, withTimeout } from '../../db/mongo.js';
import { alertModel } from '../../models/alert.js';
import { productModel } from '../../models/product.js';
import type { Alert } from '../rules/alert.js';
import type { ProductLabel } from './channels/message.js';

/**
 * What an attempt reads and writes of the alerts it delivers, and of their product. Every call
 * has a deadline (maxTimeMS on reads, DELIVERY_DB_TIMEOUT_MS on writes), so a stalled MongoDB
 * fails the attempt instead of holding the worker's slot.
 */
export class DeliveredAlerts {
  constructor(private readonly conn: Connection) {}

  private get alerts() {
    return alertModel(this.conn);
  }

  /** Which of these alerts still exist and are not disabled (a queued delivery's, checked before sending). */
  async live(ids: readonly Types.ObjectId[]): Promise<Alert[]> {
    return this.alerts
      .find({ _id: mongoose.trusted({ $in: [...ids] }), disabled_at: null })
      .maxTimeMS(DELIVERY_DB_TIMEOUT_MS)
      .lean();
  }

  /** An alert of before endpoints, as a delivery queued then names it; null once deleted or disabled. */
  async legacy(alertId: string): Promise<Alert | null> {
    if (!OBJECT_ID_RE.test(alertId)) return null;
    return this.alerts
      .findOne({ _id: new Types.ObjectId(alertId), disabled_at: null })
      .maxTimeMS(DELIVERY_DB_TIMEOUT_MS)
      .lean();
  }

  /** The product's title and page, as chat and e-mail deliveries name it; nulls when the service has none yet. */
  async productLabel(country: Country, asin: string): Promise<ProductLabel> {
    const product = await productModel(this.conn)
      .findOne({ country, asin })
      .select({ title: 1, url: 1 })
      .maxTimeMS(DELIVERY_DB_TIMEOUT_MS)
      .lean();
    return { title: product?.title ?? null, url: product?.url ?? null };
  }

  /** A delivery acknowledged: its alerts' `last_delivery_at`. */
  async stampDelivered(ids: readonly Types.ObjectId[], now: Date): Promise<void> {
    await withTimeout(
      this.alerts.updateMany({ _id: mongoose.trusted({ $in: [...ids] }) }, { $set: { last_delivery_at: now } }).exec(),
      DELIVERY_DB_TIMEOUT_MS,
      'alert delivery stamp',
    );
  }
}
